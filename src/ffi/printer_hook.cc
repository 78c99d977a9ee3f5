/*!
 * \file ffi/printer_hook.cc
 * \brief Reads and replaces entries of apache-tvm's TVMScript printer dispatch table, so that tirx_layout objects
 *        print as calls the parser evaluates instead of as `metadata[...]` references.
 *
 * TVM 0.27 has no public way to add a printer rule for a foreign type: the table lives in the C++ singleton
 * `tvm::script::printer::IRDocsifier::vtable()` (exported from libtvm_compiler.so) and its setters are inline in a
 * header the wheel does not ship. The Python side (`script/printing.py`) finds the singleton's address, and only
 * for the exact apache-tvm version this was written against; here we view it through `PrinterTable`, a struct with
 * the same data members, in the same order, as `IRDocsifierFunctor<Doc, AccessPath, IRDocsifier>` in apache-tvm
 * 0.27 (`include/tvm/script/printer/ir_docsifier_functor.h`): a map from dispatch token to a vector indexed by type
 * index, then an optional fallback. Both sides use the same libstdc++ (new string ABI) and the same libtvm_ffi.
 *
 * Nothing is assumed: before the table is read as C++ objects, `TableProblem` walks its bytes through a pipe
 * (`write` reports EFAULT for memory that is not readable, where a load would fault) and checks every field of the
 * hash table — bucket array, node chain, key strings, each key's cached hash, the vectors' bounds and that every
 * entry is a tvm-ffi Function. Any doubt is reported as text and the table is left alone; the Python side then
 * prints a probe kernel after installing and compares, and turns printing off with one warning on any mismatch.
 */
#include <fcntl.h>
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>
#include <unistd.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tirx_layout/error.h"

namespace tirx_layout {
namespace ffi = tvm::ffi;

namespace {

struct PrinterTable {
  std::unordered_map<std::string, std::vector<ffi::Function>> by_token;
  std::optional<ffi::Function> fallback;
};

// No TVM build registers anywhere near this many object types; a larger vector means we misread the table.
constexpr size_t kMaxPlausibleTypes = 1 << 16;
// TVM registers a handful of dispatch tokens ("", "relax", "tirx", ...).
constexpr uint64_t kMaxPlausibleTokens = 256;
constexpr uint64_t kMaxPlausibleBuckets = 1 << 16;
constexpr uint64_t kMaxTokenLength = 256;

/*!
 * \brief Copies of memory at addresses we do not trust: the bytes go through a pipe, and `write` fails with EFAULT
 *        instead of faulting when a page is not readable.
 */
class MemoryProbe {
 public:
  MemoryProbe() {
    if (pipe2(fds_, O_CLOEXEC | O_NONBLOCK) != 0) fds_[0] = fds_[1] = -1;
  }
  ~MemoryProbe() {
    if (fds_[0] >= 0) close(fds_[0]);
    if (fds_[1] >= 0) close(fds_[1]);
  }
  MemoryProbe(const MemoryProbe&) = delete;
  MemoryProbe& operator=(const MemoryProbe&) = delete;

  bool ok() const { return fds_[0] >= 0; }

  /*! \brief Copy `size` bytes at `address` into `out`; false when any of them is not readable. */
  bool Copy(uintptr_t address, void* out, size_t size) {
    if (!ok() || address == 0 || address + size < address) return false;
    auto* dst = static_cast<char*>(out);
    while (size > 0) {
      size_t chunk = size < kChunk ? size : kChunk;
      ssize_t written = write(fds_[1], reinterpret_cast<const void*>(address), chunk);
      if (written > 0) Drain(written, dst);
      if (written != static_cast<ssize_t>(chunk)) return false;
      address += chunk;
      dst += chunk;
      size -= chunk;
    }
    return true;
  }

  /*! \brief Whether `size` bytes at `address` are readable (read in pieces, nothing kept). */
  bool Readable(uintptr_t address, size_t size) {
    char scratch[kChunk];
    while (size > 0) {
      size_t chunk = size < kChunk ? size : kChunk;
      if (!Copy(address, scratch, chunk)) return false;
      address += chunk;
      size -= chunk;
    }
    return true;
  }

 private:
  static constexpr size_t kChunk = 4096;  // at most PIPE_BUF: a pipe write of this size is all or nothing

  void Drain(ssize_t count, char* dst) {
    while (count > 0) {
      ssize_t got = read(fds_[0], dst, static_cast<size_t>(count));
      if (got <= 0) return;
      count -= got;
      dst += got;
    }
  }

  int fds_[2];
};

#if defined(__GLIBCXX__) && _GLIBCXX_USE_CXX11_ABI && UINTPTR_MAX == UINT64_MAX

// libstdc++'s members, as raw words: `_Hashtable` (buckets, bucket count, before-begin node, element count,
// rehash policy, single bucket), a `_Hash_node` with a cached hash (next, key string, value vector, hash), the new-ABI
// `basic_string` (data, length, local buffer) and `vector` (begin, end, end of storage).
struct RawHashtable {
  uintptr_t buckets;
  uint64_t bucket_count;
  uintptr_t first_node;
  uint64_t element_count;
  float max_load_factor;
  uint64_t next_resize;
  uintptr_t single_bucket;
};
struct RawString {
  uintptr_t data;
  uint64_t length;
  char local[16];
};
struct RawVector {
  uintptr_t begin, end, capacity_end;
};
struct RawNode {
  uintptr_t next;
  RawString key;
  RawVector value;
  uint64_t hash;
};
struct RawTable {
  RawHashtable by_token;
  uintptr_t fallback;
  uint8_t fallback_engaged;
};

using Entry = std::pair<const std::string, std::vector<ffi::Function>>;
static_assert(sizeof(std::unordered_map<std::string, std::vector<ffi::Function>>) == sizeof(RawHashtable));
static_assert(sizeof(std::__detail::_Hash_node<Entry, true>) == sizeof(RawNode));
static_assert(std::__cache_default<std::string, std::hash<std::string>>::value, "string hashes are cached");
static_assert(sizeof(std::string) == sizeof(RawString) && sizeof(std::vector<ffi::Function>) == sizeof(RawVector));
static_assert(sizeof(ffi::Function) == sizeof(uintptr_t));
static_assert(sizeof(PrinterTable) == sizeof(RawTable));
static_assert(sizeof(std::optional<ffi::Function>) == 2 * sizeof(uintptr_t));

/*! \brief Whether `address` holds a live tvm-ffi Function object (reference count, then type index). */
bool IsFunction(MemoryProbe& probe, uintptr_t address) {
  TVMFFIObject header;
  if (!probe.Copy(address, &header, sizeof(header))) return false;
  return header.type_index == kTVMFFIFunction && (header.combined_ref_count & 0xFFFFFFFFu) != 0;
}

std::string VectorProblem(MemoryProbe& probe, const RawVector& v, const std::string& key) {
  std::string where = "the entries of token '" + key + "'";
  if (v.begin == 0) return v.end == 0 && v.capacity_end == 0 ? "" : where + " have no storage but a size";
  if (v.begin > v.end || v.end > v.capacity_end || (v.end - v.begin) % sizeof(uintptr_t) != 0 ||
      (v.capacity_end - v.begin) % sizeof(uintptr_t) != 0) {
    return where + " are not a vector";
  }
  size_t count = (v.end - v.begin) / sizeof(uintptr_t);
  if (count > kMaxPlausibleTypes) return where + " number " + std::to_string(count) + ", too many";
  std::vector<uintptr_t> slots(count);
  if (count > 0 && !probe.Copy(v.begin, slots.data(), count * sizeof(uintptr_t))) {
    return where + " are not readable";
  }
  for (size_t i = 0; i < count; ++i) {
    if (slots[i] != 0 && !IsFunction(probe, slots[i])) {
      return where + " hold something other than a function at type index " + std::to_string(i);
    }
  }
  return "";
}

std::string TableProblem(uintptr_t address) {
  MemoryProbe probe;
  if (!probe.ok()) return "no pipe to read the table through";
  RawTable table;
  if (!probe.Copy(address, &table, sizeof(table))) return "the table is not readable";
  const RawHashtable& map = table.by_token;
  if (map.bucket_count == 0 || map.bucket_count > kMaxPlausibleBuckets) return "implausible bucket count";
  if (map.element_count == 0 || map.element_count > kMaxPlausibleTokens) return "implausible token count";
  if (!std::isfinite(map.max_load_factor) || map.max_load_factor <= 0 || map.max_load_factor > 64) {
    return "implausible load factor";
  }
  const uintptr_t single_bucket = address + offsetof(RawHashtable, single_bucket);
  if (map.bucket_count == 1 ? map.buckets != single_bucket : map.buckets == single_bucket) {
    return "the bucket array does not match the bucket count";
  }
  std::vector<uintptr_t> buckets(map.bucket_count);
  if (!probe.Copy(map.buckets, buckets.data(), buckets.size() * sizeof(uintptr_t))) {
    return "the bucket array is not readable";
  }
  std::unordered_set<uintptr_t> seen;
  bool has_default_token = false;
  uintptr_t at = map.first_node;
  for (uint64_t n = 0; n < map.element_count; ++n) {
    RawNode node;
    if (!seen.insert(at).second || !probe.Copy(at, &node, sizeof(node))) return "a token node is not readable";
    const RawString& key = node.key;
    if (key.length > kMaxTokenLength) return "a token is implausibly long";
    uintptr_t local = at + offsetof(RawNode, key) + offsetof(RawString, local);
    if (key.length < sizeof(key.local) && key.data != local) return "a short token is not stored in place";
    std::string text(key.length, '\0');
    if (key.length > 0 && !probe.Copy(key.data, text.data(), key.length)) return "a token is not readable";
    if (std::hash<std::string>{}(text) != node.hash) return "a token's cached hash is wrong";
    if (buckets[node.hash % map.bucket_count] == 0) return "a token's bucket is empty";
    std::string problem = VectorProblem(probe, node.value, text);
    if (!problem.empty()) return problem;
    has_default_token |= text.empty();
    at = node.next;
  }
  if (at != 0) return "more token nodes than the element count";
  if (!has_default_token) return "no entries for the default token";
  if (table.fallback_engaged > 1) return "the fallback is not an optional";
  if (table.fallback_engaged && table.fallback != 0 && !IsFunction(probe, table.fallback)) {
    return "the fallback is not a function";
  }
  return "";
}

#else

std::string TableProblem(uintptr_t) { return "this build's C++ standard library is not the one TVM 0.27 uses"; }

#endif

/*! \brief The table at `address`, after `TableProblem` found nothing wrong with it. */
PrinterTable& Table(int64_t address) {
  std::string problem = TableProblem(static_cast<uintptr_t>(address));
  if (!problem.empty()) FailValue("the TVMScript printer table does not have the layout of apache-tvm 0.27: " + problem);
  return *reinterpret_cast<PrinterTable*>(static_cast<uintptr_t>(address));
}

ffi::Optional<ffi::Function> Lookup(int64_t address, const std::string& token, int64_t type_index) {
  PrinterTable& table = Table(address);
  auto it = table.by_token.find(token);
  if (it == table.by_token.end() || type_index < 0 || static_cast<size_t>(type_index) >= it->second.size()) {
    return std::nullopt;
  }
  const ffi::Function& entry = it->second[type_index];
  if (!entry.defined()) return std::nullopt;
  return entry;
}

/*!
 * \brief Put `rule` in the table for (token, type_index), or clear the entry when it is None; returns the rule it
 *        replaces, if any.
 */
ffi::Optional<ffi::Function> Install(int64_t address, const std::string& token, int64_t type_index,
                                     ffi::Optional<ffi::Function> rule) {
  if (type_index < 0 || static_cast<size_t>(type_index) >= kMaxPlausibleTypes) {
    FailValue("not an object type index: " + std::to_string(type_index));
  }
  PrinterTable& table = Table(address);
  std::vector<ffi::Function>& slots = table.by_token[token];
  if (slots.size() <= static_cast<size_t>(type_index)) slots.resize(type_index + 1);
  ffi::Optional<ffi::Function> previous;
  if (slots[type_index].defined()) previous = slots[type_index];
  slots[type_index] = rule.value_or(ffi::Function());
  return previous;
}

}  // namespace

TVM_FFI_STATIC_INIT_BLOCK() {
  ffi::reflection::GlobalDef()
      .def("tirx_layout.PrinterTableProblem",
           [](int64_t address) { return TableProblem(static_cast<uintptr_t>(address)); })
      .def("tirx_layout.PrinterRuleLookup", Lookup)
      .def("tirx_layout.PrinterRuleInstall", Install);
}

}  // namespace tirx_layout
