// Package storage owns filemill's blob backends — the implementations of domain.Blobs
// and its optional domain.MultipartBlobs ability — and the built-in storage host that
// serves local blobs through signed URLs.
//
// It imports domain, minio-go and golang.org/x/sys (sync_file_range) only; it must never
// import rest, graph, db or jobs. cmd wires a backend into the services and starts the
// storage host's listener. Subpackages: storagetest is the behaviour every backend must
// show, miniotest runs a real MinIO server for the S3 tests.
//
// Two backends:
//
//   - Local keeps each object as a plain file at Dir/<key> and answers pre-signed URLs
//     itself (Handler). Writes stream through a 1 MiB buffer into Dir/.tmp (disk
//     writeback started every 8 MiB, so the final fsync is short), are fsynced, then
//     linked or renamed into place, so a reader never sees half an object and a PUT
//     that answered survives a crash. A single PUT links (never overwrites): of two
//     racing PUTs for one key exactly one wins, the other answers 409. Multipart parts
//     live under Dir/.uploads/<upload id>/ until they are assembled or aborted. Keys may
//     not have a segment beginning with ".", so no key can reach those directories.
//   - S3 talks to any S3-compatible store (MinIO, AWS S3) through minio-go and hands out
//     the store's own pre-signed URLs.
//
// # Local URL signing
//
// A URL is {PublicURL}/o/{key}?{query}. The query holds, in this order, op (put, part or
// get), upload and part (op=part), size (put and part), name (get, when a download name
// was given), exp (Unix seconds) and sig. sig is base64url(HMAC-SHA256(secret, fields)),
// where fields are "filemill-storage-v1", op, key, size, upload id, part number, name and
// exp, each preceded by its length, so no two grants share a signed string. The host
// rebuilds the canonical URL from what it parsed and requires the path and query to equal
// it byte for byte, so any changed, added or removed byte answers 403 — as do a wrong
// signature (compared with hmac.Equal), an expired URL, and a method the op does not allow.
// PUT and part URLs also require Content-Length equal to the signed size (411, 413 or
// 400 otherwise) and read at most that many bytes. Refusals carry the API's error shape,
// {"error":{"code":…,"message":…}}. Any origin may use the URLs (CORS): the URL is the
// credential.
//
// # ETags
//
// Part ETags are the quoted hex MD5 of the part's bytes, as S3 answers, because
// CompleteMultipart verifies the ETags a client hands back against the stored parts.
// Whole-object ETags (single PUT, GET) are "<size hex>-<mtime ns hex>" from the file's
// metadata: hashing every byte of a single PUT would cost more CPU than the write itself,
// and nothing compares those ETags with content (the SHA-256 the services compute is the
// content hash).
//
// # Egress
//
// Local sees every byte it serves: the storage host counts the bytes written to each
// GET response (ranges and aborted downloads count what was sent) and reports them
// through LocalConfig.OnEgress after the response (HEAD, 304, 416 and refusals count
// nothing). Local therefore implements domain.EgressMeter, answering true when OnEgress
// is set. S3 serves bytes without us, so it cannot meter them: for S3 the
// services count the object's size when a download URL is minted (domain.Files does it;
// this package only mints the URL).
package storage
