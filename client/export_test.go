package client

// SetAnswerHook makes f see every answer the client decodes (its body, the
// decoded value, whether the fast decoder took it) until the returned
// function is called. Tests only; not safe while clients are in use.
func SetAnswerHook(f func(body []byte, out any, fast bool)) (restore func()) {
	prev := answerHook
	answerHook = f
	return func() { answerHook = prev }
}

// DecodeAnswer is decodeAnswer, for tests.
var DecodeAnswer = decodeAnswer
