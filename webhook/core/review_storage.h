#pragma once
// ReviewStorage: the memory one AdmissionReview decode keeps while its request is judged:
// the body's text (parsed in place: kept strings point into it), the pool its kept values
// live in, a block for the parse stack, and the document. Each thread keeps one spare, so
// in steady state a decode allocates none of these: a review thread judges one request
// at a time, and its storage goes back to the spare when the request is done.
//
//   ReviewStoragePtr storage = ReviewStorage::acquire(body);  // text holds a copy of body
//   scan_review(storage->text(), body.size(), storage->document(), reserve);
//
// A review that keeps more than the first chunks allocates further chunks, freed when it
// is done; a text over kKeptTextCapacity is not kept in the spare (one 8 MiB body must not
// pin 8 MiB per thread). A storage must not be released by a thread that is exiting (its
// spare is gone): none is held in a thread_local or a static.

#include <rapidjson/document.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <string_view>

namespace kubegap {

// ParseStackAllocator: RapidJSON's allocator concept for a document's parse stack. The
// stack lives in a block of the storage while it fits (RapidJSON's default allocator
// mallocs and frees it on every parse); once it outgrows the block it is on the heap,
// realloc'd as it grows and freed, as before: a flat array of millions of values must
// not leave each outgrown copy behind, as a pool would (the memory budget counts one
// stack). The block goes to one stack at a time (a Parse on the document would give this
// allocator to its reader's stack too). Free is static in the concept, so each piece
// carries a tag saying whose it is.
class ParseStackAllocator {
 public:
  static const bool kNeedFree = true;
  ParseStackAllocator() = default;
  // `block`: `size` bytes, 16-aligned, outliving the allocator.
  ParseStackAllocator(char* block, std::size_t size);
  void* Malloc(std::size_t size) { return Realloc(nullptr, 0, size); }
  void* Realloc(void* original, std::size_t original_size, std::size_t new_size);
  static void Free(void* piece);

 private:
  static constexpr std::size_t kTagBytes = 16;  // keeps the piece 16-aligned
  char* block_ = nullptr;                       // its tag, then the piece
  std::size_t block_size_ = 0;                  // of the piece
};

// ReviewDocument: a decoded review's kept members, in a pool, and its parse stack.
using ReviewDocument =
    rapidjson::GenericDocument<rapidjson::UTF8<>, rapidjson::MemoryPoolAllocator<>, ParseStackAllocator>;

// kTextPadding: readable bytes from the text's NUL terminator on (the scan reads 32
// bytes at a time).
inline constexpr std::size_t kTextPadding = 32;

class ReviewStorage;
struct ReviewStorageRelease {
  void operator()(ReviewStorage* storage) const;
};
using ReviewStoragePtr = std::unique_ptr<ReviewStorage, ReviewStorageRelease>;

class ReviewStorage {
 public:
  // acquire: the thread's spare storage (or a new one, when it is in use) holding `body`
  // NUL-terminated and padded, and a fresh, empty document.
  static ReviewStoragePtr acquire(std::string_view body);
  // created_on_this_thread: how many storages acquire has made on this thread (a spare
  // taken is not counted): in steady state it stays put.
  static std::size_t created_on_this_thread();

  char* text() { return text_.get(); }
  std::size_t text_capacity() const { return text_capacity_; }
  ReviewDocument& document() { return *document_; }

  static constexpr std::size_t kValueChunk = 64 * 1024;  // RapidJSON's default chunk
  static constexpr std::size_t kStackChunk = 16 * 1024;  // a review nests about 10 deep
  static constexpr std::size_t kStackCapacity = 1024;    // the stack's first size (RapidJSON's)
  static constexpr std::size_t kKeptTextCapacity = 1024 * 1024;

 private:
  friend struct ReviewStorageRelease;
  void reset();

  std::unique_ptr<char[]> text_;
  std::size_t text_capacity_ = 0;
  std::unique_ptr<char[]> value_chunk_ = std::make_unique_for_overwrite<char[]>(kValueChunk);
  std::unique_ptr<char[]> stack_chunk_ = std::make_unique_for_overwrite<char[]>(kStackChunk);
  std::optional<rapidjson::MemoryPoolAllocator<>> values_;
  std::optional<ParseStackAllocator> stack_;
  std::optional<ReviewDocument> document_;
};

}  // namespace kubegap
