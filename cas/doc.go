// Package cas implements the content-addressed blob store (core.Cas,
// docs/spec/semantics.md §4.5; docs/spec/reliability.md §4.3): S3 on an S3
// bucket and Dir in a local directory (the embedded default). Both satisfy
// Store, the core.Cas port plus streaming (PutBlob, Open) and maintenance
// (Size, Stat, Delete, List, ListInfo) methods used by deployment submit,
// list_deployment_files and gc_orphan_files (CollectOrphans).
//
// # Key scheme
//
// A blob is stored under the lower-case hex of its SHA-256 (core.ContentDigest):
//
//	S3:  <prefix>sha256/<64 hex>                 e.g. cas/sha256/9f86d0…0a08
//	Dir: <root>/sha256/<first 2 hex>/<64 hex>    e.g. blobs/sha256/9f/9f86d0…0a08
//
// The "sha256/" segment leaves room for other algorithms. List walks exactly
// these names in ascending digest order and ignores anything else under them.
//
// # Idempotency
//
// Writes are put-if-absent and never overwrite: S3 sends If-None-Match: *
// and treats 412 PreconditionFailed ("already exists") as success; Dir links
// a fully written temp file into place, which fails harmlessly if the blob is
// already there. Writing the same blob twice, or from many goroutines at
// once, returns the same digest and leaves one copy. S3's 409
// ConditionalRequestConflict (a concurrent conditional write still in flight)
// is retried by WriteBlob and reported by PutBlob as core.ErrConflict, since
// a stream cannot be replayed. S3 may also answer 412 before the body is
// sent and reset the connection, which the HTTP transport reports as a write
// error; so a failed PUT is followed by HeadObject, and if the blob is there
// the write succeeded (PutBlob still reads and verifies the caller's
// remaining bytes). Delete of an absent blob succeeds.
//
// Writing a blob that already exists refreshes its modification time (Dir:
// the file's mtime; S3: LastModified, by copying the object onto itself with
// fresh metadata), so that every write, even one that stores nothing new,
// starts a new garbage-collection grace period for the blob. The copy is an
// overwrite: credentials restricted to writes with If-None-Match get 403 for
// it, which S3 treats as "not refreshed" (the write still succeeds) — grant
// s3:PutObject without that condition on the CAS prefix to keep the refresh. If the blob
// disappears between the existence check and the refresh (collected
// meanwhile), WriteBlob uploads it again; PutBlob, which cannot replay its
// stream, fails with core.ErrConflict.
//
// # Garbage collection
//
// gc_orphan_files deletes blobs that nothing in the database refers to.
// store.Service runs it through CollectOrphans (the method of Dir and S3),
// asking the backend which candidates are referenced, with one rule beyond
// Obelisk's: a blob is collected only if it was last written more than a
// grace period ago (store.Options.GCGrace, default store.DefaultGCGrace,
// one hour). Obelisk deletes every unreferenced blob, which robs a
// submission that has uploaded its blobs but not yet inserted the deployment
// (or a writer that offloaded a payload but has not yet committed the item
// that refers to it). With the grace period such a writer has an hour from
// its last write of each blob to commit the reference, and a writer that
// dies before committing leaves an orphan that the first collection after
// the grace period removes. When an execution tree expires (retention),
// the references of its offloaded payloads go with it, so its blobs become
// orphans too unless another tree or a deployment refers to them.
//
// The order of CollectOrphans' steps protects concurrent writers: it lists
// the blobs first; then, for each candidate, right before deleting it, it
// reads the references to it (strongly consistent, so every reference
// committed before that moment is seen) and its modification time again,
// and spares it if it is referenced or was written again meanwhile. What
// remains is a window of a few milliseconds per blob: a writer that commits
// a reference to an orphan last written more than the grace period ago,
// without writing the blob again, between those reads and the delete loses
// the blob. Writers therefore write (or re-write) a blob right before
// committing a reference to it. For a deployment file such a loss shows up
// as a missing digest (missing_digests, size 0), which a submitter checks
// before activating.
//
// Time: ModTime comes from the store's clock (the file system, the S3
// service); the grace period is measured against the backend's injected
// clock (core.Clock). The two must roughly agree; a skew well below the
// grace period is harmless.
//
// # Verification
//
// Nothing is stored under a key its bytes do not hash to:
//   - WriteBlob computes the digest itself.
//   - PutBlob takes a digest declared by the caller and hashes the bytes as
//     they stream; the final chunk is withheld unless the hash and length
//     match, so the S3 request never completes (S3 stores nothing on a short
//     body) and Dir never links the temp file. Such a put fails with
//     core.ErrValidation. On S3 the request also carries
//     x-amz-checksum-sha256 and a SigV4 signed payload hash equal to the
//     digest, so AWS rejects a mismatch on its side (BadDigest,
//     XAmzContentSHA256Mismatch) even if our check were bypassed.
//   - Every read re-hashes the bytes and fails closed with ErrCorrupt when
//     they do not match the digest (bit rot, an out-of-band overwrite, a
//     misbehaving server). Open verifies while streaming and withholds the
//     last chunk of a corrupt blob; ReadBlob returns nothing.
//
// # What the emulators cannot check
//
// gofakes3 v1.2.0 (in-process and cmd/gofakes3), moto and s3rver accept a
// wrong x-amz-checksum-sha256 and ignore the signature, so their tests prove
// nothing about AWS's server-side rejection. Our own streaming verification
// (the tests upload mismatching bytes and see nothing stored) and read-side
// verification (the tests overwrite an object through the raw client and see
// reads fail) cover that gap. s3rver also ignores If-None-Match; gofakes3
// honours it (412), so idempotency is tested against gofakes3.
package cas
