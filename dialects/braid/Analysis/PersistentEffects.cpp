//===- PersistentEffects.cpp - what ops do to persistent tensors ----------===//

#include "dialects/braid/Analysis/PersistentEffects.h"

#include "dialects/braid/IR/BraidOps.h"

using namespace mlir;
using namespace mlir::braid;

void PersistentEffects::namedByOp(Operation *op, llvm::StringSet<> &out) {
  if (isa<func::CallOp>(op))
    return; // its callee's symbol is a function, not a tensor
  for (NamedAttribute attr : op->getAttrs())
    if (auto ref = dyn_cast<FlatSymbolRefAttr>(attr.getValue()))
      if (attr.getName() != "grid")
        out.insert(ref.getValue());
}

StringRef PersistentEffects::writtenByOp(Operation *op) {
  if (auto set = dyn_cast<SetParamOp>(op))
    return set.getParam();
  if (auto u = dyn_cast<AdamWUpdateOp>(op))
    return u.getParam();
  if (auto u = dyn_cast<SGDUpdateOp>(op))
    return u.getParam();
  return {};
}

/// Optimizer updates and increments write persistent storage in place.
static bool updatesInPlace(Operation *op) {
  return isa<AdamWUpdateOp, SGDUpdateOp, IncrementOp>(op);
}

const PersistentEffects::Summary &PersistentEffects::of(func::FuncOp func) {
  if (auto it = memo.find(func); it != memo.end())
    return it->second;
  memo[func] = Summary(); // a recursive call ends here
  Summary s;
  func.walk([&](Operation *op) {
    namedByOp(op, s.named);
    if (StringRef name = writtenByOp(op); !name.empty()) {
      s.written.insert(name);
      if (isa<SetParamOp>(op))
        s.set.insert(name);
    }
    s.updates |= updatesInPlace(op);
    if (const Summary *c = ofCallee(op)) {
      for (const auto &n : c->named)
        s.named.insert(n.getKey());
      for (const auto &n : c->written)
        s.written.insert(n.getKey());
      for (const auto &n : c->set)
        s.set.insert(n.getKey());
      s.updates |= c->updates;
    }
  });
  // Not `memo[func] = std::move(s)` through the reference taken above: the
  // walk's recursive queries may have grown (and moved) the map.
  return memo[func] = std::move(s);
}

const PersistentEffects::Summary *PersistentEffects::ofCallee(Operation *op) {
  auto call = dyn_cast<func::CallOp>(op);
  if (!call)
    return nullptr;
  auto callee = symbols.lookup<func::FuncOp>(call.getCallee());
  if (!callee || callee.isExternal())
    return nullptr;
  return &of(callee);
}

bool PersistentEffects::names(Operation *op, StringRef name) {
  llvm::StringSet<> own;
  namedByOp(op, own);
  if (own.contains(name))
    return true;
  const Summary *c = ofCallee(op);
  return c && c->named.contains(name);
}

bool PersistentEffects::writes(Operation *op, StringRef name) {
  if (writtenByOp(op) == name)
    return true;
  const Summary *c = ofCallee(op);
  return c && c->written.contains(name);
}

bool PersistentEffects::updates(Operation *op) {
  if (updatesInPlace(op))
    return true;
  const Summary *c = ofCallee(op);
  return c && c->updates;
}

llvm::StringSet<> PersistentEffects::namedBy(Operation *op) {
  llvm::StringSet<> out;
  namedByOp(op, out);
  if (const Summary *c = ofCallee(op))
    for (const auto &n : c->named)
      out.insert(n.getKey());
  return out;
}

llvm::StringSet<> PersistentEffects::setBy(Operation *op) {
  llvm::StringSet<> out;
  if (auto set = dyn_cast<SetParamOp>(op))
    out.insert(set.getParam());
  if (const Summary *c = ofCallee(op))
    for (const auto &n : c->set)
      out.insert(n.getKey());
  return out;
}
