// A stub of the Stela SDK for the analyzer's tests: the subset of its API
// the test programs use, with the real signatures (TestStubMatchesTheSDK
// checks them against the real packages) and no bodies worth the name.
module github.com/stela-dev/stela

go 1.26
