package storage

import "math"

// DefaultConfig returns Kafka's defaults.
func DefaultConfig() Config {
	return Config{
		SegmentBytes:          1 << 30,
		SegmentMs:             7 * 24 * 60 * 60 * 1000,
		SegmentIndexBytes:     10 << 20,
		IndexIntervalBytes:    4096,
		MaxMessageBytes:       1048588,
		RetentionMs:           168 * 60 * 60 * 1000,
		RetentionBytes:        -1,
		FlushIntervalMessages: math.MaxInt64,
		FlushIntervalMs:       math.MaxInt64,
		LogAppendTime:         false,
		FileDeleteDelayMs:     60000,

		DeleteRetentionMs:      86400000,
		MinCleanableDirtyRatio: 0.5,
	}
}

// normalized fills zero fields with defaults so a partially filled Config
// (common in tests and in the broker's topic overrides) behaves sanely.
func (c Config) normalized() Config {
	d := DefaultConfig()
	if c.SegmentBytes <= 0 {
		c.SegmentBytes = d.SegmentBytes
	}
	if c.SegmentMs <= 0 {
		c.SegmentMs = d.SegmentMs
	}
	if c.SegmentIndexBytes < 24 {
		// At least two time-index entries, so the roll check that keeps
		// one entry in reserve can ever let an append through.
		if c.SegmentIndexBytes <= 0 {
			c.SegmentIndexBytes = d.SegmentIndexBytes
		} else {
			c.SegmentIndexBytes = 24
		}
	}
	if c.IndexIntervalBytes <= 0 {
		c.IndexIntervalBytes = d.IndexIntervalBytes
	}
	if c.MaxMessageBytes <= 0 {
		c.MaxMessageBytes = d.MaxMessageBytes
	}
	if c.FileDeleteDelayMs < 0 {
		c.FileDeleteDelayMs = 0
	}
	c.DeleteRetentionMs = max(c.DeleteRetentionMs, 0)
	c.MinCompactionLagMs = max(c.MinCompactionLagMs, 0)
	c.MinCleanableDirtyRatio = min(max(c.MinCleanableDirtyRatio, 0), 1)
	return c
}

// flushByMessages reports whether n unflushed messages call for an fsync.
func (c Config) flushByMessages(n int64) bool {
	return c.FlushIntervalMessages > 0 && c.FlushIntervalMessages != math.MaxInt64 && n >= c.FlushIntervalMessages
}

// flushByTimeEnabled reports whether FlushIntervalMs forces fsyncs at all.
func (c Config) flushByTimeEnabled() bool {
	return c.FlushIntervalMs > 0 && c.FlushIntervalMs != math.MaxInt64
}
