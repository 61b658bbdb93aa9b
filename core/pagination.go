package core

// Direction of a page.
type Direction uint8

// Directions.
const (
	// NewerThan selects keys > cursor (>= if inclusive), scanned ascending.
	NewerThan Direction = iota + 1
	// OlderThan selects keys < cursor (<= if inclusive), scanned descending.
	OlderThan
)

// Pagination is the seed's Pagination<T>. Length must be non-zero.
type Pagination[T any] struct {
	Direction       Direction
	Length          uint16
	Cursor          T
	IncludingCursor bool
}

// Validate rejects a zero length or an unknown direction.
func (p Pagination[T]) Validate() error {
	if p.Length == 0 {
		return invalid("pagination length must be non-zero")
	}
	if p.Direction != NewerThan && p.Direction != OlderThan {
		return invalid("invalid pagination direction")
	}
	return nil
}

// IsDesc reports whether the scan is descending (OlderThan).
func (p Pagination[T]) IsDesc() bool { return p.Direction == OlderThan }

// Invert flips the direction and negates IncludingCursor.
func (p Pagination[T]) Invert() Pagination[T] {
	q := p
	if p.Direction == NewerThan {
		q.Direction = OlderThan
	} else {
		q.Direction = NewerThan
	}
	q.IncludingCursor = !p.IncludingCursor
	return q
}

// Rel returns the SQL relation: >, >=, < or <=.
func (p Pagination[T]) Rel() string {
	switch {
	case p.Direction == NewerThan && !p.IncludingCursor:
		return ">"
	case p.Direction == NewerThan:
		return ">="
	case !p.IncludingCursor:
		return "<"
	}
	return "<="
}

// Accepts reports whether key passes the cursor condition, given cmp(key, cursor).
func (p Pagination[T]) Accepts(cmp int) bool {
	switch p.Rel() {
	case ">":
		return cmp > 0
	case ">=":
		return cmp >= 0
	case "<":
		return cmp < 0
	}
	return cmp <= 0
}
