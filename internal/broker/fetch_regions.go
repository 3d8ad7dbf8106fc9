package broker

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/weir-project/weir/internal/server"
	"github.com/weir-project/weir/internal/storage"
)

// fetchResponse is a Fetch response whose record sets are file regions
// pinned in their segments (server.RegionResponse): the server writes them
// from the files, without copying them through memory, and releases them.
type fetchResponse struct {
	*kmsg.FetchResponse
	regions []regionAt
}

// regionAt is a partition's record set, by its place in the response.
type regionAt struct {
	topic, partition int
	region           *storage.Region
}

// Regions lists the record-set fields and their regions, in encoding
// order (topics and partitions are filled in order).
func (r *fetchResponse) Regions() []server.RegionField {
	out := make([]server.RegionField, len(r.regions))
	for i, at := range r.regions {
		out[i] = server.RegionField{
			Field:  &r.Topics[at.topic].Partitions[at.partition].RecordBatches,
			Region: at.region,
		}
	}
	return out
}

// release unpins every region (a refill reads them again).
func (r *fetchResponse) release() {
	for _, at := range r.regions {
		at.region.Release()
	}
	r.regions = r.regions[:0]
}
