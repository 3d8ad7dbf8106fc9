package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
)

// Series figures may be NaN (a failed round), which JSON cannot hold: they
// are written as null.

type seriesJSON struct {
	Name     string
	MBps     []*float64 `json:",omitempty"`
	CPUPerGB []*float64 `json:",omitempty"`
	Batch    []*float64 `json:",omitempty"`

	ClientCPUPerGB []*float64 `json:",omitempty"`
}

func toNullable(xs []float64) []*float64 {
	var out []*float64
	for _, x := range xs {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			out = append(out, nil)
			continue
		}
		v := x
		out = append(out, &v)
	}
	return out
}

func fromNullable(xs []*float64) []float64 {
	var out []float64
	for _, x := range xs {
		if x == nil {
			out = append(out, math.NaN())
			continue
		}
		out = append(out, *x)
	}
	return out
}

// MarshalJSON writes NaN figures as null.
func (s Series) MarshalJSON() ([]byte, error) {
	return json.Marshal(seriesJSON{Name: s.Name, MBps: toNullable(s.MBps), CPUPerGB: toNullable(s.CPUPerGB), Batch: toNullable(s.Batch),
		ClientCPUPerGB: toNullable(s.ClientCPUPerGB)})
}

// UnmarshalJSON reads null figures as NaN.
func (s *Series) UnmarshalJSON(data []byte) error {
	var j seriesJSON
	if err := json.Unmarshal(data, &j); err != nil {
		return err
	}
	*s = Series{Name: j.Name, MBps: fromNullable(j.MBps), CPUPerGB: fromNullable(j.CPUPerGB), Batch: fromNullable(j.Batch),
		ClientCPUPerGB: fromNullable(j.ClientCPUPerGB)}
	return nil
}

// Save writes the run as JSON, so the page can be rendered again without
// measuring again.
func (r *Run) Save(path string) error {
	data, err := json.MarshalIndent(r, "", " ")
	if err != nil {
		return fmt.Errorf("encode run: %w", err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("save run: %w", err)
	}
	return nil
}

// Load reads a run saved by Save.
func Load(path string) (*Run, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("load run: %w", err)
	}
	var r Run
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode run %s: %w", path, err)
	}
	return &r, nil
}
