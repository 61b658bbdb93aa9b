package core

import "encoding/json"

// HttpClientTrace is an HTTP call made by an activity.
type HttpClientTrace struct {
	Req  RequestTrace   `json:"req"`
	Resp *ResponseTrace `json:"resp"`
}

// RequestTrace is the request half of an HttpClientTrace.
type RequestTrace struct {
	SentAt Timestamp `json:"sent_at"`
	URI    string    `json:"uri"`
	Method string    `json:"method"`
}

// ResponseTrace is the response half; Status is {"Ok":<u16>} or {"Err":"msg"}.
type ResponseTrace struct {
	FinishedAt Timestamp    `json:"finished_at"`
	Status     StatusResult `json:"status"`
}

// StatusResult is Result<u16, String>.
type StatusResult struct {
	Code uint16
	Err  *string
}

// MarshalJSON encodes the result.
func (s StatusResult) MarshalJSON() ([]byte, error) {
	if s.Err != nil {
		return MarshalJSON(map[string]string{"Err": *s.Err})
	}
	return MarshalJSON(map[string]uint16{"Ok": s.Code})
}

// UnmarshalJSON decodes the result.
func (s *StatusResult) UnmarshalJSON(b []byte) error {
	var j struct {
		Ok  *uint16 `json:"Ok"`
		Err *string `json:"Err"`
	}
	if err := json.Unmarshal(b, &j); err != nil || (j.Ok == nil) == (j.Err == nil) {
		return invalid(`status must be {"Ok":n} or {"Err":"msg"}`)
	}
	if j.Ok != nil {
		*s = StatusResult{Code: *j.Ok}
	} else {
		*s = StatusResult{Err: j.Err}
	}
	return nil
}
