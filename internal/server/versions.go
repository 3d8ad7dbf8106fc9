package server

import (
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// versionRange is the inclusive range of versions supported for one API.
type versionRange struct{ min, max int16 }

// versionTable says which API keys and versions the server accepts. It is
// built once in New and read-only afterwards, so connections share it
// without locking.
type versionTable struct {
	ranges map[int16]versionRange
	keys   []int16 // sorted, for a stable ApiVersions answer
}

// newVersionTable validates the configured ranges and caps each maximum at
// what kmsg can decode. ApiVersions is always present: it is answered by
// the server itself, with the configured range if one is given and
// otherwise everything kmsg knows.
func newVersionTable(apis map[int16][2]int16) (*versionTable, error) {
	t := &versionTable{ranges: make(map[int16]versionRange, len(apis)+1)}
	for key, r := range apis {
		req := kmsg.RequestForKey(key)
		if req == nil {
			return nil, fmt.Errorf("API key %d: unknown to kmsg", key)
		}
		lo, hi := r[0], min(r[1], req.MaxVersion())
		if lo < 0 || lo > hi {
			return nil, fmt.Errorf("API key %d (%s): invalid version range [%d, %d] (kmsg max %d)",
				key, kmsg.NameForKey(key), r[0], r[1], req.MaxVersion())
		}
		t.ranges[key] = versionRange{lo, hi}
	}
	if _, ok := t.ranges[apiVersionsKey]; !ok {
		t.ranges[apiVersionsKey] = versionRange{0, kmsg.NewPtrApiVersionsRequest().MaxVersion()}
	}
	for key := range t.ranges {
		t.keys = append(t.keys, key)
	}
	slices.Sort(t.keys)
	return t, nil
}

func (t *versionTable) known(key int16) bool {
	_, ok := t.ranges[key]
	return ok
}

func (t *versionTable) supports(key, version int16) bool {
	r, ok := t.ranges[key]
	return ok && version >= r.min && version <= r.max
}

// apiVersionsResponse answers an ApiVersions request of the given version.
// When the client asked for a version we do not support, the caller passes
// version 0 and unsupported=true: per KIP-511 the answer is then in the v0
// format with UNSUPPORTED_VERSION and our ranges, so the client can retry
// with a version we list.
func (t *versionTable) apiVersionsResponse(version int16, unsupported bool) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.SetVersion(version)
	if unsupported {
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	resp.ApiKeys = make([]kmsg.ApiVersionsResponseApiKey, 0, len(t.keys))
	for _, key := range t.keys {
		r := t.ranges[key]
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = key, advertisedMin(key, r.min), r.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	// ThrottleMillis stays 0, and the v3+ feature fields stay empty: we
	// have no feature flags to advertise.
	return resp
}

// advertisedMin is the minimum version ApiVersions lists for key. Like
// Kafka 4.0 (KAFKA-18659) we list Produce from v0 even though v0-v2 are
// refused when sent: older librdkafka (2.0.2 in Debian) decides that gzip,
// snappy and lz4 are unsupported unless the broker's Produce range includes
// v0, and then silently produces uncompressed. Clients pick the highest
// common version, so none is led to send v0-v2 by this.
func advertisedMin(key, min int16) int16 {
	if key == kmsg.Produce.Int16() {
		return 0
	}
	return min
}
