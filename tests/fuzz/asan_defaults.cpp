// Linked into every fuzz and replay binary. allocator_may_return_null: an absurd allocation fails the
// way it does in production (malloc returns null; libhdf5, which sizes some buffers from damaged
// metadata, then reports an error that snnc turns into a clear message) instead of ASan aborting on a
// size beyond its limit. ASAN_OPTIONS from the environment still add to or override this.
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }
