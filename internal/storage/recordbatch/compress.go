package recordbatch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
)

// Decompression bomb guard: a batch may inflate to maxRatio times its
// compressed size, but never less than minLimit (tiny batches of repetitive
// records legitimately compress extremely well) nor more than maxLimit.
const (
	maxRatio = 64
	minLimit = 16 << 20
	maxLimit = 256 << 20
	// zstd frames choose their window; a hostile one could demand gigabytes.
	maxZstdWindow = 32 << 20
)

// xerialMagic opens snappy data framed by the Java snappy-java library.
var xerialMagic = []byte{0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0}

// xerialHeaderSize is the magic plus version and compatible-version int32s.
const xerialHeaderSize = 16

func decompressLimit(n int) int {
	if n > maxLimit/maxRatio {
		return maxLimit
	}
	return max(n*maxRatio, minLimit)
}

// decompress inflates a batch's records section.
func decompress(c Compression, src []byte) ([]byte, error) {
	return decompressLimited(c, src, decompressLimit(len(src)))
}

// decompressLimited inflates src, failing beyond limit bytes of output.
func decompressLimited(c Compression, src []byte, limit int) ([]byte, error) {
	var (
		out []byte
		err error
	)
	switch c {
	case CompressionGzip:
		out, err = gunzip(src, limit)
	case CompressionSnappy:
		if bytes.HasPrefix(src, xerialMagic) {
			out, err = unsnappyXerial(src, limit)
		} else {
			out, err = unsnappyBlock(nil, src, limit)
		}
	case CompressionLZ4:
		out, err = unlz4(src, limit)
	case CompressionZstd:
		out, err = unzstd(src, limit)
	default:
		return nil, fmt.Errorf("%w: unknown compression codec %d", ErrCorrupt, c)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: decompress codec %d: %v", ErrCorrupt, c, err)
	}
	return out, nil
}

// readLimited reads r to the end, failing once more than limit bytes come out.
func readLimited(r io.Reader, limit int) ([]byte, error) {
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(out) > limit {
		return nil, fmt.Errorf("decompresses beyond the %d byte limit", limit)
	}
	return out, nil
}

func gunzip(src []byte, limit int) ([]byte, error) {
	r, err := gzip.NewReader(bytes.NewReader(src))
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return readLimited(r, limit)
}

// unsnappyBlock appends the decoding of one raw snappy block to dst.
func unsnappyBlock(dst, src []byte, limit int) ([]byte, error) {
	n, err := snappy.DecodedLen(src)
	if err != nil {
		return nil, err
	}
	if n > limit-len(dst) {
		return nil, fmt.Errorf("decompresses beyond the %d byte limit", limit)
	}
	block, err := snappy.Decode(nil, src)
	if err != nil {
		return nil, err
	}
	return append(dst, block...), nil
}

// unsnappyXerial decodes snappy-java's framing: magic, two int32 versions,
// then chunks of [int32 length][raw snappy block].
func unsnappyXerial(src []byte, limit int) ([]byte, error) {
	if len(src) < xerialHeaderSize {
		return nil, fmt.Errorf("xerial header truncated at %d bytes", len(src))
	}
	src = src[xerialHeaderSize:]
	out := []byte{}
	for len(src) > 0 {
		if len(src) < 4 {
			return nil, fmt.Errorf("xerial chunk length truncated")
		}
		n := binary.BigEndian.Uint32(src)
		src = src[4:]
		if uint64(n) > uint64(len(src)) {
			return nil, fmt.Errorf("xerial chunk of %d bytes, %d left", n, len(src))
		}
		var err error
		if out, err = unsnappyBlock(out, src[:n], limit); err != nil {
			return nil, err
		}
		src = src[n:]
	}
	return out, nil
}

// lz4Readers pools frame readers, which carry sizeable block buffers.
var lz4Readers = sync.Pool{New: func() any { return lz4.NewReader(nil) }}

func unlz4(src []byte, limit int) ([]byte, error) {
	r := lz4Readers.Get().(*lz4.Reader)
	defer lz4Readers.Put(r)
	r.Reset(bytes.NewReader(src))
	out, err := readLimited(r, limit)
	r.Reset(nil)
	return out, err
}

// zstdDecoders pools streaming decoders: building one is costly and a
// Decoder is not safe for concurrent streams.
var zstdDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxWindow(maxZstdWindow))
	if err != nil {
		return err
	}
	return d
}}

func unzstd(src []byte, limit int) ([]byte, error) {
	v := zstdDecoders.Get()
	d, ok := v.(*zstd.Decoder)
	if !ok {
		return nil, fmt.Errorf("new zstd decoder: %v", v)
	}
	defer zstdDecoders.Put(d)
	if err := d.Reset(bytes.NewReader(src)); err != nil {
		return nil, err
	}
	out, err := readLimited(d, limit)
	// Drop the reference to src so the pooled decoder does not pin it.
	_ = d.Reset(nil)
	return out, err
}

// zstdEncoder is shared: EncodeAll is safe for concurrent use.
var zstdEncoder = sync.OnceValues(func() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1))
})

// compress encodes a records section with codec c (raw snappy, LZ4 frame).
func compress(c Compression, src []byte) ([]byte, error) {
	var buf bytes.Buffer
	switch c {
	case CompressionNone:
		return src, nil
	case CompressionGzip:
		w := gzip.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
	case CompressionSnappy:
		return snappy.Encode(nil, src), nil
	case CompressionLZ4:
		w := lz4.NewWriter(&buf)
		if _, err := w.Write(src); err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
		if err := w.Close(); err != nil {
			return nil, fmt.Errorf("lz4: %w", err)
		}
	case CompressionZstd:
		enc, err := zstdEncoder()
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return enc.EncodeAll(src, nil), nil
	default:
		return nil, fmt.Errorf("unknown compression codec %d", c)
	}
	return buf.Bytes(), nil
}
