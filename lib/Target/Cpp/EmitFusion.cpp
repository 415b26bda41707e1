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
#include "llvm/ADT/TypeSwitch.h"

namespace braid::cpp {

static FailureOr<std::string> elementwiseExpression(Operation *op,
                                                    ArrayRef<std::string> in) {
  auto act = [](Activation a, const std::string &x) -> std::string {
    switch (a) {
    case Activation::SiLU:
      return "braid::silu(" + x + ")";
    case Activation::GELU:
      return "braid::gelu(" + x + ")";
    case Activation::GELUTanh:
      return "braid::gelu_tanh(" + x + ")";
    case Activation::Sigmoid:
      return "braid::sigmoid(" + x + ")";
    case Activation::ReLU:
      return "braid::relu(" + x + ")";
    }
    llvm_unreachable("unknown activation");
  };
  return TypeSwitch<Operation *, FailureOr<std::string>>(op)
      .Case([&](GeluOp g) {
        return act(g.getApproximate() ? Activation::GELUTanh
                                      : Activation::GELU,
                   in[0]);
      })
      .Case([&](SiluOp) { return act(Activation::SiLU, in[0]); })
      .Case([&](SigmoidOp) { return act(Activation::Sigmoid, in[0]); })
      .Case([&](ReluOp) { return act(Activation::ReLU, in[0]); })
      .Case([&](ExpOp) { return "braid::exp(" + in[0] + ")"; })
      .Case([&](NegOp) { return "-" + in[0]; })
      .Case([&](AddOp) { return in[0] + " + " + in[1]; })
      .Case([&](FillOp f) {
        return "static_cast<float>(" +
               literal(f.getValue().convertToDouble()) + ")";
      })
      .Case([&](MulOp) { return in[0] + " * " + in[1]; })
      .Case([&](GluOp g) {
        return act(g.getActivation(), in[0]) + " * " + in[1];
      })
      .Default([](Operation *) { return failure(); });
}

LogicalResult FunctionEmitter::emitFusedGroup(Operation *root,
                                              raw_ostream &os) {
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
    FailureOr<std::string> expr = elementwiseExpression(member, in);
    if (failed(expr))
      return member->emitError("cannot fuse this op");
    std::string t = "t" + std::to_string(local.size());
    local[member->getResult(0)] = t;
    compute += "    const float " + t + " = " + *expr + ";\n";
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

  os << "  braid_rt_op_begin(rt, " << quoted(ops) << ", "
     << quoted(nameOf(result)) << ");\n";
  os << "  braid::launch_elementwise(rt, " << numElements(result) << ", "
     << name << "{";
  for (auto &[leaf, x] : leaves)
    os << "static_cast<const " << storageType(leaf.getType()) << " *>("
       << ptr(leaf) << "), ";
  os << "static_cast<" << type << " *>(" << ptr(result) << ")});\n";
  os << "  braid_rt_op_end(rt);\n";
  return success();
}

} // namespace braid::cpp
