package storage

import (
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// cachedFiles creates n files in a temp dir, file i holding "file-<i>",
// each with a segFile in a cache of the given capacity.
func cachedFiles(t *testing.T, n, capacity int) (*fileCache, []*segFile) {
	t.Helper()
	c := newFileCache(capacity)
	dir := t.TempDir()
	hs := make([]*segFile, n)
	for i := range hs {
		p := filepath.Join(dir, fmt.Sprintf("%d.log", i))
		if err := os.WriteFile(p, fmt.Appendf(nil, "file-%03d", i), 0o644); err != nil {
			t.Fatal(err)
		}
		hs[i] = newSegFile(c, p)
	}
	t.Cleanup(func() {
		for _, h := range hs {
			h.close()
		}
	})
	return c, hs
}

// readVia checks that h's descriptor reads file i's content.
func readVia(h *segFile, i int) error {
	f, err := h.acquire()
	if err != nil {
		return err
	}
	defer h.release()
	b := make([]byte, 8)
	if _, err := f.ReadAt(b, 0); err != nil {
		return fmt.Errorf("read %s: %w", h.name(), err)
	}
	if want := fmt.Sprintf("file-%03d", i); string(b) != want {
		return fmt.Errorf("%s reads %q, want %q", h.name(), b, want)
	}
	return nil
}

func TestFileCacheStaysWithinCapacity(t *testing.T) {
	c, hs := cachedFiles(t, 10, 3)
	for round := range 3 {
		for i, h := range hs {
			if err := readVia(h, i); err != nil {
				t.Fatal(err)
			}
			if n := c.Open(); n > 3 {
				t.Fatalf("round %d file %d: %d open, capacity 3", round, i, n)
			}
		}
	}
	if c.evictions.Load() == 0 || c.opened.Load() <= 10 {
		t.Fatalf("opened %d, evicted %d: cycling 10 files through 3 slots must reopen", c.opened.Load(), c.evictions.Load())
	}
	// A file used again and again is not evicted for files used once
	// (second chance; a new file enters without it).
	for range 2 {
		if err := readVia(hs[0], 0); err != nil {
			t.Fatal(err)
		}
	}
	opened := c.opened.Load()
	for i := 1; i < len(hs); i++ {
		if err := readVia(hs[i], i); err != nil {
			t.Fatal(err)
		}
		if err := readVia(hs[0], 0); err != nil {
			t.Fatal(err)
		}
	}
	if got := c.opened.Load() - opened; got != int64(len(hs)-1) {
		t.Fatalf("%d opens for one hot and %d cold files: the hot one was evicted", got, len(hs)-1)
	}
}

// TestFileCacheNeverClosesInUse: with every slot in use the cache goes
// over capacity rather than close a descriptor under its user, and comes
// back within capacity once they release.
func TestFileCacheNeverClosesInUse(t *testing.T) {
	c, hs := cachedFiles(t, 4, 1)
	held := make([]interface {
		ReadAt([]byte, int64) (int, error)
	}, 0, 3)
	for _, h := range hs[:3] {
		f, err := h.acquire()
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, f)
	}
	if err := readVia(hs[3], 3); err != nil {
		t.Fatal(err)
	}
	if n := c.Open(); n != 3 {
		t.Fatalf("%d open with 3 in use, capacity 1 (the idle one must go)", n)
	}
	for i, f := range held {
		b := make([]byte, 8)
		if _, err := f.ReadAt(b, 0); err != nil || string(b) != fmt.Sprintf("file-%03d", i) {
			t.Fatalf("held descriptor %d: %q, %v", i, b, err)
		}
	}
	for _, h := range hs[:3] {
		h.release()
	}
	if n := c.Open(); n != 1 {
		t.Fatalf("%d open after every user released, capacity 1", n)
	}
}

// TestFileCacheRetireWhileInUse: a retired file keeps serving its user,
// is closed at the release, and is never reopened.
func TestFileCacheRetireWhileInUse(t *testing.T) {
	c, hs := cachedFiles(t, 2, 4)
	f, err := hs[0].acquire()
	if err != nil {
		t.Fatal(err)
	}
	if err := hs[0].close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(hs[0].name()); err != nil { // as retention does after file.delete.delay.ms
		t.Fatal(err)
	}
	b := make([]byte, 8)
	if _, err := f.ReadAt(b, 0); err != nil || string(b) != "file-000" {
		t.Fatalf("read through a retired file in use: %q, %v", b, err)
	}
	hs[0].release()
	if n := c.Open(); n != 0 {
		t.Fatalf("%d open after the last user of a retired file left", n)
	}
	if _, err := f.ReadAt(b, 0); !errors.Is(err, os.ErrClosed) {
		t.Fatalf("descriptor still usable after release: %v", err)
	}
	if _, err := hs[0].acquire(); !errors.Is(err, ErrClosed) {
		t.Fatalf("acquire of a retired file: %v, want ErrClosed", err)
	}
	// Retiring an idle open file closes it at once.
	if err := readVia(hs[1], 1); err != nil {
		t.Fatal(err)
	}
	if err := hs[1].close(); err != nil || c.Open() != 0 {
		t.Fatalf("close of an idle file: %v, %d open", err, c.Open())
	}
}

// TestFileCacheRenameFollowsTheFile: a file renamed with its descriptor
// cached, evicted, then used again reads the same file under its new
// name; so does one renamed while it has no descriptor.
func TestFileCacheRenameFollowsTheFile(t *testing.T) {
	_, hs := cachedFiles(t, 3, 1)
	if err := readVia(hs[0], 0); err != nil {
		t.Fatal(err)
	}
	if err := hs[0].rename(hs[0].name() + deletedSuffix); err != nil {
		t.Fatal(err)
	}
	if err := readVia(hs[0], 0); err != nil { // still the cached descriptor
		t.Fatal(err)
	}
	if err := readVia(hs[1], 1); err != nil { // evicts file 0
		t.Fatal(err)
	}
	if err := hs[2].rename(hs[2].name() + swapSuffix); err != nil { // no descriptor
		t.Fatal(err)
	}
	for _, i := range []int{0, 2, 0} {
		if err := readVia(hs[i], i); err != nil {
			t.Fatalf("after rename: %v", err)
		}
	}
	if filepath.Ext(hs[0].name()) != deletedSuffix || filepath.Ext(hs[2].name()) != swapSuffix {
		t.Fatalf("paths %s, %s", hs[0].name(), hs[2].name())
	}
}

// TestFileCacheConcurrentUse: many goroutines use and rename files
// through a cache much smaller than the set. Under -race this checks the
// fast path against eviction; every read must see its own file.
func TestFileCacheConcurrentUse(t *testing.T) {
	c, hs := cachedFiles(t, 24, 4)
	var wg sync.WaitGroup
	errc := make(chan error, 8)
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewSource(int64(g)))
			for range 3000 {
				i := rng.Intn(len(hs))
				if err := readVia(hs[i], i); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Add(1)
	go func() { // renames back and forth, as *.deleted and swaps do
		defer wg.Done()
		for k := range 300 {
			h := hs[k%len(hs)]
			p := h.name()
			alt := p + deletedSuffix
			if filepath.Ext(p) == deletedSuffix {
				alt = p[:len(p)-len(deletedSuffix)]
			}
			if err := h.rename(alt); err != nil {
				errc <- err
				return
			}
		}
	}()
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	if n := c.Open(); n > 4 {
		t.Fatalf("%d open with nothing in use, capacity 4", n)
	}
	t.Logf("%d opens, %d evictions", c.opened.Load(), c.evictions.Load())
}

// TestFileCacheClosesIdle: a sweep closes the files not used since the
// previous one, keeps the others and never touches one in use.
func TestFileCacheClosesIdle(t *testing.T) {
	c, hs := cachedFiles(t, 3, 8)
	for range 2 { // the second use sets the reference bit
		if err := readVia(hs[0], 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := readVia(hs[1], 1); err != nil { // reopened, used once
		t.Fatal(err)
	}
	if _, err := hs[2].acquire(); err != nil { // in use throughout
		t.Fatal(err)
	}
	if n := c.closeIdle(); n != 1 || c.Open() != 2 {
		t.Fatalf("first sweep closed %d, %d open; want file 1 closed", n, c.Open())
	}
	if n := c.closeIdle(); n != 1 || c.Open() != 1 {
		t.Fatalf("second sweep closed %d, %d open; want file 0 closed too", n, c.Open())
	}
	hs[2].release()
	if n := c.closeIdle(); n != 1 || c.Open() != 0 {
		t.Fatalf("third sweep closed %d, %d open", n, c.Open())
	}
	if err := readVia(hs[0], 0); err != nil { // reopens
		t.Fatal(err)
	}
}

func TestSegmentFileBudget(t *testing.T) {
	for _, tc := range []struct {
		nofile uint64
		want   int
	}{
		{0, 16}, {64, 16}, {272, 16}, {300, 44}, {512, 256}, {1024, 512},
		{20000, 10000}, {1 << 20, 1 << 19}, {1 << 62, 1 << 20}, {^uint64(0), 1 << 20},
	} {
		if got := segmentFileBudget(tc.nofile); got != tc.want {
			t.Errorf("segmentFileBudget(%d) = %d, want %d", tc.nofile, got, tc.want)
		}
	}
	if n := DefaultMaxOpenFiles(); n < minSegmentFiles {
		t.Fatalf("DefaultMaxOpenFiles() = %d", n)
	}
}
