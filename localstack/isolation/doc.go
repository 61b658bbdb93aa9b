// Package isolation holds an emulator conformance test, not Stela code:
// TestConcurrentTransactionsAreIsolated checks, against the DynamoDB
// endpoint of AWS_ENDPOINT_URL_DYNAMODB (or AWS_ENDPOINT_URL), the one
// property of TransactWriteItems that Stela's race guarantees rest on and
// that AWS documents: transactions are serializable with each other and with
// single-item writes, and a cancelled transaction changes nothing
// ("Isolation levels for DynamoDB transactions" in
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html).
//
// It passes on DynamoDB Local (CI) and fails on moto_server 5.2.1, whose
// transact_write_items takes no lock, applies each action as it evaluates
// it, and undoes a cancelled transaction by restoring a copy of the whole
// table taken when it started — erasing writes that other requests committed
// meanwhile. localstack/run-tests.sh runs it first and, when it fails (or the
// endpoint is moto), reports the contract race tests as not applicable.
package isolation
