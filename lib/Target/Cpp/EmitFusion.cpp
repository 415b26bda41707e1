//===- EmitFusion.cpp - generated fused elementwise kernels ---------------===//
//
// A fused group (ElementwiseFusion) becomes one functor: it loads the group's
// leaves, computes every member in f32 and stores the root; the runtime's
// braid::launch_elementwise runs it as a loop (CPU) or a CUDA kernel.
//
//===----------------------------------------------------------------------===//

#include "Emitter.h"

#include "dialects/braid/IR/BraidOps.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace braid::cpp {

LogicalResult FunctionEmitter::emitFusedGroup(Operation *root) {
  ArrayRef<Operation *> members = fp.fusion->getMembers(root);
  llvm::SmallPtrSet<Operation *, 8> inGroup(members.begin(), members.end());
  llvm::MapVector<Value, std::string> leaves;
  llvm::DenseMap<Value, std::string> local;
  std::string compute;
  std::string ops;
  for (Operation *member : members) {
    SmallVector<std::string> in;
    for (Value operand : member->getOperands()) {
      Operation *producer = operand.getDefiningOp();
      if (producer && inGroup.contains(producer)) {
        in.push_back(local[operand]);
        continue;
      }
      auto [it, inserted] = leaves.try_emplace(
          operand, "x" + std::to_string(leaves.size()));
      in.push_back(it->second);
    }
    auto scalar = dyn_cast<ScalarExpressionOpInterface>(member);
    if (!scalar)
      return member->emitError("cannot fuse this op");
    std::string t = "t" + std::to_string(local.size());
    local[member->getResult(0)] = t;
    compute += "    const float " + t + " = " +
               scalar.getScalarExpression(in) + ";\n";
    if (!ops.empty())
      ops += "+";
    ops += member->getName().stripDialect().str();
  }
  Value result = root->getResult(0);
  std::string type = storageType(result.getType());
  std::string body = " {\n";
  for (auto &[leaf, x] : leaves)
    body += "  const " + storageType(leaf.getType()) + " *in_" + x + ";\n";
  body += "  " + type + " *out;\n";
  body += "  BRAID_HD void operator()(int64_t i) const {\n";
  for (auto &[leaf, x] : leaves)
    body += "    const float " + x + " = braid::load(in_" + x + ", i);\n";
  body += compute;
  body += "    braid::store(out, i, " + local[result] + ");\n  }\n};\n\n";
  // One functor per distinct computation: groups that compute the same
  // (every parameter's scaling by one coefficient, the same activation in
  // every layer) share it, so kernels do not grow with the model.
  auto [known, fresh] = program.kernelNames.try_emplace(
      body, "fused_" + std::to_string(program.nextKernel));
  std::string name = known->second;
  if (fresh) {
    ++program.nextKernel;
    program.kernels += "// " + ops + "\nstruct " + name + body;
  }

  addStatement(Code("braid_rt_op_begin(rt, ")
               << Code::string(ops) << ", " << Code::string(nameOf(result))
               << ")");
  Code launch("braid::launch_elementwise(rt, ");
  launch << numElements(result) << ", " << name << "{";
  for (auto &[leaf, x] : leaves)
    launch << "static_cast<const " << storageType(leaf.getType()) << " *>("
           << ptr(leaf) << "), ";
  addStatement(launch << "static_cast<" << type << " *>(" << ptr(result)
                      << ")})");
  addStatement("braid_rt_op_end(rt)");
  return success();
}

} // namespace braid::cpp
