package server

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// apiVersionsKey is the API key of ApiVersions, which the server answers
// itself and which has special fallback rules (KIP-511).
const apiVersionsKey int16 = 18

// Protocol errors found while parsing a request frame. Every one of them
// closes the connection; they are distinguished for logging and tests.
var (
	errMalformedHeader    = errors.New("malformed request header")
	errUnknownAPIKey      = errors.New("unknown API key")
	errUnsupportedVersion = errors.New("unsupported API version")
	errMalformedBody      = errors.New("malformed request body")
)

// header is the request header, v1 or v2 (v2 adds tagged fields, which we
// skip: nothing we implement uses header tags).
type header struct {
	APIKey        int16
	APIVersion    int16
	CorrelationID int32
	ClientID      string // empty when the client sent null
}

// parsed is the outcome of parsing one request frame. Exactly one of req
// or err is set, except for an ApiVersions request with a version we do
// not support: then req and err are nil and apiVersionsFallback is true,
// and the caller answers in the v0 format with UNSUPPORTED_VERSION.
type parsed struct {
	hdr                 header
	req                 kmsg.Request
	apiVersionsFallback bool
	err                 error
	size                int          // frame bytes, for the read-ahead budget
	res                 *reservation // the request's memory, returned when it is answered
	fb                  *frameBuf    // the frame's pooled memory, if any (see frameBufs)
	received            time.Time    // when the frame was read whole (request metrics)
	checked             checkedRecords
}

// parseRequest decodes one request frame (the bytes after the 4-byte size
// prefix). It never panics on arbitrary input: kmsg bounds every array
// count by the bytes left, and the header is parsed here with explicit
// length checks. Trailing bytes after the body are tolerated, as newer
// clients may append fields we do not know.
func parseRequest(frame []byte, versions *versionTable) parsed {
	var p parsed
	rest, err := parseHeaderV1(frame, &p.hdr)
	if err != nil {
		p.err = err
		return p
	}
	key, version := p.hdr.APIKey, p.hdr.APIVersion

	// The API key is checked before the version so that an unknown key is
	// reported as such, and ApiVersions is checked before parsing its
	// body: a client asking for a newer ApiVersions than ours may encode
	// a body (or header) we cannot read, and KIP-511 says to answer it
	// anyway.
	req := kmsg.RequestForKey(key)
	if req == nil || !versions.known(key) {
		p.err = fmt.Errorf("%w %d (version %d)", errUnknownAPIKey, key, version)
		return p
	}
	if !versions.supports(key, version) {
		if key == apiVersionsKey {
			p.apiVersionsFallback = true
			return p
		}
		p.err = fmt.Errorf("%w: API key %d version %d", errUnsupportedVersion, key, version)
		return p
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		rest, err = skipTaggedFields(rest)
		if err != nil {
			p.err = fmt.Errorf("%w: API key %d version %d: header tagged fields: %v",
				errMalformedHeader, key, version, err)
			return p
		}
	}
	if err := req.ReadFrom(rest); err != nil {
		p.err = fmt.Errorf("%w: API key %d version %d: %v", errMalformedBody, key, version, err)
		return p
	}
	p.req = req
	return p
}

// parseHeaderV1 reads the fields common to request headers v1 and v2:
// api key, api version, correlation id and the nullable client id. The
// client id is a classic (int16-length) string even in header v2.
func parseHeaderV1(b []byte, h *header) ([]byte, error) {
	const fixed = 2 + 2 + 4 + 2
	if len(b) < fixed {
		return nil, fmt.Errorf("%w: %d bytes, need at least %d", errMalformedHeader, len(b), fixed)
	}
	h.APIKey = int16(binary.BigEndian.Uint16(b[0:]))
	h.APIVersion = int16(binary.BigEndian.Uint16(b[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(b[4:]))
	n := int16(binary.BigEndian.Uint16(b[8:]))
	b = b[fixed:]
	switch {
	case n == -1:
		h.ClientID = ""
	case n < 0:
		return nil, fmt.Errorf("%w: client id length %d", errMalformedHeader, n)
	case int(n) > len(b):
		return nil, fmt.Errorf("%w: client id length %d exceeds the %d bytes left", errMalformedHeader, n, len(b))
	default:
		h.ClientID = string(b[:n])
		b = b[n:]
	}
	return b, nil
}

// skipTaggedFields skips a tagged-field section: a uvarint count, then for
// each field a uvarint tag, a uvarint size and that many bytes.
func skipTaggedFields(b []byte) ([]byte, error) {
	count, b, err := readUvarint32(b)
	if err != nil {
		return nil, fmt.Errorf("tag count: %w", err)
	}
	for i := uint32(0); i < count; i++ {
		if _, b, err = readUvarint32(b); err != nil {
			return nil, fmt.Errorf("tag %d of %d: key: %w", i, count, err)
		}
		var size uint32
		if size, b, err = readUvarint32(b); err != nil {
			return nil, fmt.Errorf("tag %d of %d: size: %w", i, count, err)
		}
		if uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("tag %d of %d: size %d exceeds the %d bytes left", i, count, size, len(b))
		}
		b = b[size:]
	}
	return b, nil
}

// readUvarint32 reads an unsigned varint that must fit in 32 bits, as
// Kafka's protocol requires.
func readUvarint32(b []byte) (uint32, []byte, error) {
	v, n := binary.Uvarint(b)
	switch {
	case n == 0:
		return 0, nil, errors.New("truncated uvarint")
	case n < 0 || v > math.MaxUint32:
		return 0, nil, errors.New("uvarint overflows 32 bits")
	}
	return uint32(v), b[n:], nil
}
