#include "webhook/core/review_storage.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace kubegap {
namespace {

// The thread's spare. A storage released on another thread than it was acquired on
// becomes that thread's spare (or is freed): each thread only ever touches its own.
thread_local std::unique_ptr<ReviewStorage> t_spare;
thread_local std::size_t t_created = 0;

}  // namespace

// The tag before each piece of a parse stack: the storage's block, free or given out, or
// a piece malloc'd here. The block is given to one stack at a time (a document's Parse
// would give the same allocator to its reader's stack too); Free, static in RapidJSON's
// concept, frees it by its tag.
constexpr unsigned char kBlockFree = 1;
constexpr unsigned char kBlockUsed = 3;
constexpr unsigned char kHeap = 2;

ParseStackAllocator::ParseStackAllocator(char* block, std::size_t size) : block_(block), block_size_(size - kTagBytes) {
  block_[0] = static_cast<char>(kBlockFree);
}

void* ParseStackAllocator::Realloc(void* original, std::size_t original_size, std::size_t new_size) {
  if (new_size == 0) {
    Free(original);
    return nullptr;
  }
  char* const piece = block_ == nullptr ? nullptr : block_ + kTagBytes;
  const bool block_free = piece != nullptr && static_cast<unsigned char>(block_[0]) == kBlockFree;
  if (original == nullptr && block_free && new_size <= block_size_) {
    block_[0] = static_cast<char>(kBlockUsed);
    return piece;
  }
  if (original == piece && piece != nullptr && new_size <= block_size_) return piece;
  if (original == nullptr || original == piece) {
    auto* heap = static_cast<char*>(std::malloc(new_size + kTagBytes));
    if (heap == nullptr) return nullptr;
    heap[0] = static_cast<char>(kHeap);
    if (original != nullptr) {
      std::memcpy(heap + kTagBytes, original, std::min(original_size, new_size));
      block_[0] = static_cast<char>(kBlockFree);  // the stack left it
    }
    return heap + kTagBytes;
  }
  auto* heap = static_cast<char*>(std::realloc(static_cast<char*>(original) - kTagBytes, new_size + kTagBytes));
  return heap == nullptr ? nullptr : heap + kTagBytes;
}

void ParseStackAllocator::Free(void* piece) {
  if (piece == nullptr) return;
  char* const start = static_cast<char*>(piece) - kTagBytes;
  if (static_cast<unsigned char>(start[0]) == kHeap) {
    std::free(start);
  } else {
    start[0] = static_cast<char>(kBlockFree);
  }
}

ReviewStoragePtr ReviewStorage::acquire(std::string_view body) {
  std::unique_ptr<ReviewStorage> storage = std::move(t_spare);
  if (!storage) {
    storage = std::make_unique<ReviewStorage>();
    ++t_created;
  }
  if (storage->text_capacity_ < body.size() + kTextPadding) {
    storage->text_capacity_ = body.size() + kTextPadding;
    storage->text_ = std::make_unique_for_overwrite<char[]>(storage->text_capacity_);
  }
  char* const text = storage->text_.get();
  std::copy(body.begin(), body.end(), text);
  std::fill_n(text + body.size(), kTextPadding, '\0');
  storage->values_.emplace(storage->value_chunk_.get(), kValueChunk);
  storage->stack_.emplace(storage->stack_chunk_.get(), kStackChunk);
  storage->document_.emplace(&*storage->values_, kStackCapacity, &*storage->stack_);
  return ReviewStoragePtr(storage.release());
}

std::size_t ReviewStorage::created_on_this_thread() { return t_created; }

void ReviewStorage::reset() {
  // The document first: it frees its stack through stack_. Destroying the pool frees the
  // chunks beyond the first; the first chunk and the stack's block are this object's.
  document_.reset();
  values_.reset();
  stack_.reset();
}

void ReviewStorageRelease::operator()(ReviewStorage* storage) const {
  std::unique_ptr<ReviewStorage> owned(storage);
  owned->reset();
  if (!t_spare && owned->text_capacity_ <= ReviewStorage::kKeptTextCapacity) t_spare = std::move(owned);
}

}  // namespace kubegap
