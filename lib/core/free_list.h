// An allocator for std::allocate_shared of objects that a graph builds and drops by the hundred
// (nodes, tensors): blocks of one size come from a free list per thread. glibc's per-thread
// cache keeps seven blocks of a size; past them its slower paths took a fifth of building a
// chain of 200 ops. A block freed on another thread joins that thread's list. Under
// AddressSanitizer the heap's, whose checks a free list would hide.
#pragma once
#include <cstddef>
#include <new>

namespace tj::core {

namespace free_list_detail {

struct List {
  void* head = nullptr;
  size_t count = 0;
  bool closed = false; // the thread is exiting: blocks go back to the heap
};
// Trivially destroyed, so usable while other thread-locals are destroyed at the thread's exit.
template <size_t Size> inline thread_local List list;

// Frees a thread's list of Size-byte blocks when the thread exits.
template <size_t Size> struct Reaper {
  ~Reaper() {
    List& l = list<Size>;
    l.closed = true;
    while (l.head) {
      void* next = *static_cast<void**>(l.head);
      ::operator delete(l.head);
      l.head = next;
    }
    l.count = 0;
  }
};

#if defined(__SANITIZE_ADDRESS__) // GCC
inline constexpr bool kPooled = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) // clang
inline constexpr bool kPooled = false;
#else
inline constexpr bool kPooled = true;
#endif
#else
inline constexpr bool kPooled = true;
#endif

// Makes sure the calling thread frees its list of Size-byte blocks when it exits: called
// wherever a block may join the list (a thread may only ever free blocks others allocated).
template <size_t Size> void arm_reaper() {
  thread_local Reaper<Size> reaper;
  (void)reaper;
}
inline constexpr size_t kMaxBlocks = 4096; // per size and thread: about 1 MiB of nodes

} // namespace free_list_detail

template <class T> struct FreeListAllocator {
  using value_type = T;
  FreeListAllocator() = default;
  template <class U> FreeListAllocator(const FreeListAllocator<U>&) {}

  T* allocate(size_t n) {
    namespace d = free_list_detail;
    // Lists are kept by size alone: blocks from operator new suit any type of that size.
    static_assert(sizeof(T) >= sizeof(void*) && alignof(T) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);
    d::List& l = d::list<sizeof(T)>;
    if (d::kPooled && n == 1 && l.head) {
      void* p = l.head;
      l.head = *static_cast<void**>(p);
      --l.count;
      return static_cast<T*>(p);
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }

  void deallocate(T* p, size_t n) {
    namespace d = free_list_detail;
    d::List& l = d::list<sizeof(T)>;
    if (d::kPooled && n == 1 && !l.closed && l.count < d::kMaxBlocks) {
      if (!l.head) d::arm_reaper<sizeof(T)>(); // the list's first block (again)
      *reinterpret_cast<void**>(p) = l.head;
      l.head = p;
      ++l.count;
      return;
    }
    ::operator delete(p);
  }

  template <class U> bool operator==(const FreeListAllocator<U>&) const { return true; }
};

} // namespace tj::core
