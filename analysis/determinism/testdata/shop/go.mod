// The analyzer's test programs: workflows that break each rule, and the
// false-positive traps that must not be reported.
module example.com/shop

go 1.26

require (
	example.com/thirdparty v0.0.0
	github.com/stela-dev/stela v0.0.0
)

replace (
	example.com/thirdparty => ../thirdparty
	github.com/stela-dev/stela => ../stela
)
