package obs

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
)

// EMFDocument is one parsed EMF line (ParseEMF).
type EMFDocument struct {
	// Root is the whole JSON object: metric values, dimension values and
	// properties.
	Root map[string]any
	// Units maps each metric the document declares to its unit.
	Units map[string]string
	// Dimensions are the declared dimension sets.
	Dimensions [][]string
	// Namespace is the first directive's namespace.
	Namespace string
	// Timestamp is _aws.Timestamp (epoch milliseconds).
	Timestamp int64
}

// ParseEMF reads EMF lines and checks each against the structure the
// specification requires: an "_aws" member with an epoch-milliseconds
// Timestamp and CloudWatchMetrics directives (Namespace; Dimensions whose
// sets have at most 30 keys, each a string member of the root; Metrics
// with Name and Unit, each a number or an array of 1 to 100 numbers at the
// root). It is what the tests of the functions check their stdout with.
func ParseEMF(r io.Reader) ([]EMFDocument, error) {
	var docs []EMFDocument
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		d, err := parseEMFLine(sc.Bytes())
		if err != nil {
			return docs, fmt.Errorf("EMF line %d: %w", n, err)
		}
		docs = append(docs, d)
	}
	return docs, sc.Err()
}

func parseEMFLine(line []byte) (EMFDocument, error) {
	d := EMFDocument{Units: map[string]string{}}
	if err := json.Unmarshal(line, &d.Root); err != nil {
		return d, fmt.Errorf("not JSON: %w", err)
	}
	aws, ok := d.Root["_aws"].(map[string]any)
	if !ok {
		return d, fmt.Errorf("no _aws member")
	}
	ts, ok := aws["Timestamp"].(float64)
	if !ok || ts < 1e12 {
		return d, fmt.Errorf("_aws.Timestamp %v is not epoch milliseconds", aws["Timestamp"])
	}
	d.Timestamp = int64(ts)
	cwm, ok := aws["CloudWatchMetrics"].([]any)
	if !ok || len(cwm) == 0 {
		return d, fmt.Errorf("no _aws.CloudWatchMetrics")
	}
	for _, raw := range cwm {
		dir, ok := raw.(map[string]any)
		if !ok {
			return d, fmt.Errorf("directive %v is not an object", raw)
		}
		ns, _ := dir["Namespace"].(string)
		if ns == "" {
			return d, fmt.Errorf("directive without Namespace")
		}
		if d.Namespace == "" {
			d.Namespace = ns
		}
		sets, ok := dir["Dimensions"].([]any)
		if !ok {
			return d, fmt.Errorf("directive without Dimensions")
		}
		for _, set := range sets {
			keys, ok := set.([]any)
			if !ok || len(keys) > 30 {
				return d, fmt.Errorf("dimension set %v", set)
			}
			var ds []string
			for _, k := range keys {
				ks, _ := k.(string)
				if _, ok := d.Root[ks].(string); !ok {
					return d, fmt.Errorf("dimension %v is not a string member of the root", k)
				}
				ds = append(ds, ks)
			}
			d.Dimensions = append(d.Dimensions, ds)
		}
		metrics, ok := dir["Metrics"].([]any)
		if !ok || len(metrics) == 0 {
			return d, fmt.Errorf("directive without Metrics")
		}
		for _, raw := range metrics {
			m, _ := raw.(map[string]any)
			name, _ := m["Name"].(string)
			unit, _ := m["Unit"].(string)
			if name == "" {
				return d, fmt.Errorf("metric without Name")
			}
			switch v := d.Root[name].(type) {
			case float64:
			case []any:
				if len(v) == 0 || len(v) > emfMaxValues {
					return d, fmt.Errorf("metric %s has %d values", name, len(v))
				}
				for _, x := range v {
					if _, ok := x.(float64); !ok {
						return d, fmt.Errorf("metric %s has a non-numeric value %v", name, x)
					}
				}
			default:
				return d, fmt.Errorf("metric %s has no numeric value at the root", name)
			}
			d.Units[name] = unit
		}
	}
	return d, nil
}

// SumEMF adds the values of metric name over the documents whose root
// members equal the pairs of where; with count it counts the values
// instead (a histogram's observations).
func SumEMF(docs []EMFDocument, name string, count bool, where ...string) float64 {
	total := 0.0
next:
	for _, d := range docs {
		if _, ok := d.Units[name]; !ok {
			continue
		}
		for i := 0; i+1 < len(where); i += 2 {
			if d.Root[where[i]] != where[i+1] {
				continue next
			}
		}
		switch v := d.Root[name].(type) {
		case float64:
			if count {
				total++
			} else {
				total += v
			}
		case []any:
			for _, x := range v {
				if count {
					total++
				} else {
					total += x.(float64)
				}
			}
		}
	}
	return total
}
