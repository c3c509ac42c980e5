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
//     that answered survives a crash. Client bytes are staged under
//     Dir/.uploads/<upload id>/: a single PUT links its body there as "object" (never
//     overwriting: of racing PUTs exactly one lands, the others answer 409
//     upload_session_consumed); multipart parts are written in place, each at its
//     offset, into one file beside it, under a lock on their byte range, and
//     completion (holding the whole file) links that file as the object, so assembling
//     copies nothing. Completion and abort
//     first rename the directory away, so from that instant no PUT can land in it and
//     every later one answers 409 upload_session_consumed. Keys may not have a segment
//     beginning with ".", so no key can reach those directories.
//   - S3 talks to any S3-compatible store (MinIO, AWS S3) through minio-go and hands out
//     the store's own pre-signed URLs. Every upload is a multipart upload, a single PUT
//     being its part 1, because the store refuses the URLs of a multipart upload once it
//     is completed or aborted (NoSuchUpload): no other kind of pre-signed PUT can be
//     revoked before it expires.
//
// Either way an object's key is written once, by completion, from the staged bytes: a
// download URL can only ever serve those, and nothing once the object is deleted.
//
// # Local URL signing
//
// A URL is {PublicURL}/o/{key}?{query}. The query holds, in this order, op (put, part or
// get), upload (put and part), part and off (op=part: its number and the offset of its
// bytes in the object), size (put and part), name (get, when a
// download name was given), type (get, the Content-Type to serve, when given), exp (Unix
// seconds), n (a random nonce, so no two minted URLs are alike) and sig. sig is
// base64url(HMAC-SHA256(secret, fields)), where fields are "filemill-storage-v2", op,
// key, size, upload id, part number, name, type, exp and nonce (and for a part, its
// offset), each preceded by its length, so no two grants share a signed string. The clock URLs are signed and checked
// by is LocalConfig.Now. The host
// rebuilds the canonical URL from what it parsed and requires the path and query to equal
// it byte for byte, so any changed, added or removed byte answers 403 — as do a wrong
// signature (compared with hmac.Equal), an expired URL, and a method the op does not allow.
// PUT and part URLs also require Content-Length equal to the signed size (411, 413 or
// 400 otherwise) and read at most that many bytes. Every answer carries X-Request-Id,
// and every refusal (416 included) the API's error shape,
// {"error":{"code":…,"message":…,"request_id":…}}. Downloads are served with the signed
// type (application/octet-stream when none) and X-Content-Type-Options: nosniff. Any
// origin may use the URLs (CORS): the URL is the credential.
//
// # ETags
//
// CompleteMultipart verifies the part ETags a client hands back against the stored
// parts, so a part's ETag must name the exact bytes stored. S3 answers their MD5; Local
// draws 128 random bits (32 hex digits) for each write of a part, which names them as
// surely and costs no pass over the bytes (the same bytes sent again get a new ETag).
// Whole-object ETags (single PUT, GET) are "<size hex>-<mtime ns hex>" from the file's
// metadata: hashing every byte would cost more CPU than the write itself, and nothing
// compares those ETags with content (the SHA-256 the services compute is the content
// hash).
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
