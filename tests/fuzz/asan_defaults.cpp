// Linked into every fuzz and replay binary. allocator_may_return_null: an absurd allocation fails the
// way it does in production (malloc returns null; libhdf5, which sizes some buffers from damaged
// metadata, then reports an error that snnc turns into a clear message) instead of ASan aborting on a
// size beyond its limit. max_allocation_size_mb: so is one over 1 GiB (the fuzzers' -malloc_limit_mb),
// which ASan would otherwise map lazily and libhdf5 would then fill until the RSS limit stops the run with
// no culprit named (a 16 GiB cache entry from a damaged checkpoint); an snnc allocation that size still
// fails the run (std::bad_alloc is no snn::Error). ASAN_OPTIONS from the environment add to or override this.
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=1024";
}
