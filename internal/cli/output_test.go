package cli

import (
	"bytes"
	"encoding/json"
	"testing"
)

func TestPrintOutput(t *testing.T) {
	tb := &table{header: []string{"TOPIC", "PARTITION"}}
	tb.add("orders", "0")
	tb.add("a-much-longer-name", "12")
	var buf bytes.Buffer
	if err := printOutput(&buf, outputTable, tb, nil); err != nil {
		t.Fatal(err)
	}
	want := "TOPIC               PARTITION\norders              0\na-much-longer-name  12\n"
	if buf.String() != want {
		t.Fatalf("table:\n%q\nwant\n%q", buf.String(), want)
	}
	buf.Reset()
	type row struct {
		Topic     string `json:"topic"`
		Partition int32  `json:"partition"`
	}
	if err := printOutput(&buf, outputJSON, tb, []row{{"orders", 0}}); err != nil {
		t.Fatal(err)
	}
	var got []row
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil || len(got) != 1 || got[0].Topic != "orders" {
		t.Fatalf("json %q: %v %v", buf.String(), got, err)
	}
	if checkOutput("yaml") == nil || checkOutput(outputJSON) != nil {
		t.Fatal("checkOutput")
	}
}
