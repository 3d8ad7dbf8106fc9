package metadata

import (
	"crypto/rand"
	"encoding/base64"
	"fmt"
)

// newUUID returns a random (version 4) UUID that is not zero and whose
// base64 form does not start with '-', as Kafka requires of topic and
// cluster ids so they never look like a command-line flag.
func newUUID() ([16]byte, error) {
	for {
		var id [16]byte
		if _, err := rand.Read(id[:]); err != nil {
			return id, fmt.Errorf("generate uuid: %w", err)
		}
		id[6] = id[6]&0x0f | 0x40 // version 4
		id[8] = id[8]&0x3f | 0x80 // RFC 4122 variant
		if FormatUUID(id)[0] != '-' {
			return id, nil
		}
	}
}

// FormatUUID renders a topic or cluster id the way Kafka prints it: 22
// characters of URL-safe base64 without padding.
func FormatUUID(id [16]byte) string {
	return base64.RawURLEncoding.EncodeToString(id[:])
}

// ParseUUID is the inverse of FormatUUID.
func ParseUUID(s string) ([16]byte, error) {
	var id [16]byte
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("parse uuid %q: want 22 characters of URL-safe base64", s)
	}
	copy(id[:], b)
	return id, nil
}
