package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

// Every listing and describe command prints through here, so that each
// has the same two forms: an aligned table for people and, with
// --output json, one JSON document for scripts (the table's data, with
// Kafka's field names in lower camel case).

const (
	outputTable = "table"
	outputJSON  = "json"
)

// addOutputFlag registers --output (-o) on cmd and returns where its value
// lands; checkOutput validates it before the command does any work.
func addOutputFlag(cmd *cobra.Command) *string {
	v := outputTable
	cmd.Flags().StringVarP(&v, "output", "o", outputTable, "output format: table or json")
	return &v
}

// checkOutput fails on an unknown --output value, naming the valid ones.
func checkOutput(format string) error {
	switch format {
	case outputTable, outputJSON:
		return nil
	}
	return fmt.Errorf("unknown --output %q: use table or json", format)
}

// table is a header and rows of cells, printed aligned.
type table struct {
	header []string
	rows   [][]string
}

func (t *table) add(cells ...string) { t.rows = append(t.rows, cells) }

// write prints the table aligned on two spaces; an empty table prints its
// header only, so that a script reading columns still finds them.
func (t *table) write(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(t.header) > 0 {
		fmt.Fprintln(tw, strings.Join(t.header, "\t"))
	}
	for _, r := range t.rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	return tw.Flush()
}

// printOutput writes t as a table, or v as indented JSON.
func printOutput(w io.Writer, format string, t *table, v any) error {
	if format == outputJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	return t.write(w)
}

// printTables writes several tables, a blank line between them (one per
// group, as kafka-consumer-groups prints them), or v as one JSON document.
func printTables(w io.Writer, format string, ts []*table, v any) error {
	if format == outputJSON {
		return printOutput(w, format, nil, v)
	}
	for i, t := range ts {
		if i > 0 {
			if _, err := fmt.Fprintln(w); err != nil {
				return err
			}
		}
		if err := t.write(w); err != nil {
			return err
		}
	}
	return nil
}
