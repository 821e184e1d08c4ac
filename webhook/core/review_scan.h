#pragma once
// scan_review: the AdmissionReview decoder's single pass. It reads the body (a mutable,
// NUL-terminated copy) once, validating all of it as RapidJSON's reader would, and builds
// values only for the members a check or the envelope reads: the root's apiVersion, kind
// and request; request.uid, kind, subResource, operation, namespace, name, dryRun and
// object; and request.object without its status, any metadata's managedFields and the
// last-applied-configuration annotation. Every other member is skipped as it is read:
// its strings are not unescaped, its numbers not converted, nothing of it is kept.
//
// A value where the envelope wants a scalar or an object but finds a container of
// another type is kept as an empty container of its type: the decoder's type checks say
// the same ("expected a string"), and a body such as {"kind": [8 MiB of numbers]} keeps
// nothing.
//
// It either accepts (the document holds the kept members, typed as RapidJSON types them:
// the differential fuzzer, tests/fuzz/review_fuzz.cpp, holds it to the DOM decoder) or
// rejects without saying why: the caller then asks RapidJSON's reader for the message, so
// errors read exactly as they always have.

#include <cstddef>
#include <functional>

#include "webhook/core/review_storage.h"

namespace kubegap {

// kKeptValueBytes: what one kept value or member name costs while the document is built:
// 16 bytes on the document's stack until its container closes, 16 in the pool after,
// and room for the stack's growth.
inline constexpr std::size_t kKeptValueBytes = 40;

// ReserveKept: asked for the estimated bytes of everything kept so far as that grows (in
// steps of about 160 KiB); false stops the scan (the request is over its memory budget).
using ReserveKept = std::function<bool(std::size_t kept_bytes)>;

enum class ReviewScan { kAccepted, kRejected, kOverBudget };

// scan_review: `text` holds `size` bytes, then a NUL and 31 more readable bytes (the scan
// reads up to 32 at a time). It is modified in place (kept strings are unescaped where
// they lie and NUL-terminated, as RapidJSON's in-situ parser does); `document` points
// into it. A NUL byte or invalid UTF-8 anywhere is rejected: UTF-8 is checked in strings,
// where alone bytes above 0x7f are valid.
ReviewScan scan_review(char* text, std::size_t size, ReviewDocument& document, const ReserveKept& reserve);

}  // namespace kubegap
