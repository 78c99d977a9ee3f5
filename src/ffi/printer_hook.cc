/*!
 * \file ffi/printer_hook.cc
 * \brief Reads and replaces entries of apache-tvm's TVMScript printer dispatch table, so that tirx_layout objects
 *        print as calls the parser evaluates instead of as `metadata[...]` references.
 *
 * TVM 0.27 has no public way to add a printer rule for a foreign type: the table lives in the C++ singleton
 * `tvm::script::printer::IRDocsifier::vtable()` (exported from libtvm_compiler.so) and its setters are inline in a
 * header the wheel does not ship. We look the singleton up with dlsym, in the library handle TVM itself loaded
 * (`tvm.base._LOADED_LIBS["tvm_compiler"]`, passed from Python), and view it through `PrinterTable`, a struct
 * with the same data members, in the same order, as `IRDocsifierFunctor<Doc, AccessPath, IRDocsifier>` in
 * apache-tvm 0.27 (`include/tvm/script/printer/ir_docsifier_functor.h`): a map from dispatch token to a vector indexed
 * by type index, then an optional fallback. Both sides use the same libstdc++ (new string ABI) and the same
 * libtvm_ffi, so the members are layout-compatible. `CheckShape` looks at the table before anything is written and
 * the Python side prints a probe after installing, so a TVM whose table differs fails loudly instead of silently.
 */
#include <dlfcn.h>
#include <cstdint>
#include <tvm/ffi/function.h>
#include <tvm/ffi/reflection/registry.h>

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "tirx_layout/error.h"

namespace tirx_layout {
namespace ffi = tvm::ffi;

namespace {

struct PrinterTable {
  std::unordered_map<std::string, std::vector<ffi::Function>> by_token;
  std::optional<ffi::Function> fallback;
};

constexpr const char* kVtableSymbol = "_ZN3tvm6script7printer11IRDocsifier6vtableEv";
// No TVM build registers anywhere near this many object types; a larger vector means we misread the table.
constexpr size_t kMaxPlausibleTypes = 1 << 20;

PrinterTable& Table(int64_t compiler_library) {
  if (compiler_library == 0) FailValue("the TVM compiler library handle is null");
  void* symbol = dlsym(reinterpret_cast<void*>(static_cast<intptr_t>(compiler_library)), kVtableSymbol);
  if (symbol == nullptr) FailValue("the TVMScript printer table is not exported by TVM's compiler library");
  return reinterpret_cast<PrinterTable& (*)()>(symbol)();
}

void CheckShape(const PrinterTable& table) {
  auto it = table.by_token.find("");
  if (it == table.by_token.end() || it->second.empty() || it->second.size() > kMaxPlausibleTypes) {
    FailValue("the TVMScript printer table does not have the layout of apache-tvm 0.27; printing hooks are off");
  }
}

ffi::Optional<ffi::Function> Lookup(int64_t compiler_library, const std::string& token,
                                    int64_t type_index) {
  PrinterTable& table = Table(compiler_library);
  CheckShape(table);
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
ffi::Optional<ffi::Function> Install(int64_t compiler_library, const std::string& token,
                                     int64_t type_index, ffi::Optional<ffi::Function> rule) {
  if (type_index < 0 || static_cast<size_t>(type_index) >= kMaxPlausibleTypes) {
    FailValue("not an object type index: " + std::to_string(type_index));
  }
  PrinterTable& table = Table(compiler_library);
  CheckShape(table);
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
      .def("tirx_layout.PrinterRuleLookup", Lookup)
      .def("tirx_layout.PrinterRuleInstall", Install);
}

}  // namespace tirx_layout
