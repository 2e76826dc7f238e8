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

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kPooled = false;
#else
inline constexpr bool kPooled = true;
#endif
inline constexpr size_t kMaxBlocks = 4096; // per size and thread: about 1 MiB of nodes

} // namespace free_list_detail

template <class T> struct FreeListAllocator {
  using value_type = T;
  FreeListAllocator() = default;
  template <class U> FreeListAllocator(const FreeListAllocator<U>&) {}

  T* allocate(size_t n) {
    namespace d = free_list_detail;
    static_assert(sizeof(T) >= sizeof(void*));
    d::List& l = d::list<sizeof(T)>;
    if (d::kPooled && n == 1) {
      if (l.head) {
        void* p = l.head;
        l.head = *static_cast<void**>(p);
        --l.count;
        return static_cast<T*>(p);
      }
      if (!l.closed) {
        thread_local d::Reaper<sizeof(T)> reaper; // constructed on the thread's first miss
        (void)reaper;
      }
    }
    return static_cast<T*>(::operator new(n * sizeof(T)));
  }

  void deallocate(T* p, size_t n) {
    namespace d = free_list_detail;
    d::List& l = d::list<sizeof(T)>;
    if (d::kPooled && n == 1 && !l.closed && l.count < d::kMaxBlocks) {
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
