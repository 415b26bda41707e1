//===- OpRules.cpp - costs and kernel calls as the ops describe them ------===//

#include "dialects/braid/IR/OpRules.h"

#include "dialects/braid/IR/BraidOps.h"

#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::braid;

int64_t mlir::braid::getElementBytes(Type type) {
  if (auto shaped = dyn_cast<ShapedType>(type))
    type = shaped.getElementType();
  return std::max<int64_t>(1, type.getIntOrFloatBitWidth() / 8);
}

int64_t mlir::braid::getTensorBytes(Type type) {
  auto shaped = cast<ShapedType>(type);
  return shaped.getNumElements() * getElementBytes(shaped.getElementType());
}

int64_t mlir::braid::getNumElements(Value value) {
  return cast<ShapedType>(value.getType()).getNumElements();
}

int64_t mlir::braid::getActivationFlops(Activation activation) {
  switch (activation) {
  case Activation::SiLU:
    return 4; // x / (1 + exp(-x))
  case Activation::GELU:
    return 5; // 0.5 x (1 + erf(x / sqrt 2))
  case Activation::GELUTanh:
    return 9; // 0.5 x (1 + tanh(c (x + 0.044715 x^3)))
  case Activation::Sigmoid:
    return 3;
  case Activation::ReLU:
    return 1;
  }
  return 1;
}

Value mlir::braid::createActivation(OpBuilder &b, Location loc,
                                    Activation activation, Value x) {
  switch (activation) {
  case Activation::SiLU:
    return SiluOp::create(b, loc, x);
  case Activation::GELU:
    return GeluOp::create(b, loc, x, /*approximate=*/false);
  case Activation::GELUTanh:
    return GeluOp::create(b, loc, x, /*approximate=*/true);
  case Activation::Sigmoid:
    return SigmoidOp::create(b, loc, x);
  case Activation::ReLU:
    return ReluOp::create(b, loc, x);
  }
  llvm_unreachable("unknown activation");
}

//===----------------------------------------------------------------------===//
// KernelArg
//===----------------------------------------------------------------------===//

KernelArg KernelArg::buffer(Value value, StringRef cType) {
  KernelArg arg(value);
  arg.cType = cType.str();
  return arg;
}

KernelArg KernelArg::symbol(StringRef name, StringRef cType) {
  KernelArg arg(Kind::Symbol);
  arg.text = name.str();
  arg.cType = cType.str();
  return arg;
}

KernelArg KernelArg::real(double value) {
  KernelArg arg(Kind::Real);
  arg.realValue = value;
  return arg;
}

KernelArg KernelArg::dtype(Type type) {
  KernelArg arg(Kind::DType);
  arg.type = type;
  return arg;
}

KernelArg KernelArg::shape(ArrayRef<int64_t> values) {
  KernelArg arg(Kind::Shape);
  arg.values.assign(values.begin(), values.end());
  return arg;
}

KernelArg KernelArg::index(Value value) {
  KernelArg arg(Kind::Index);
  arg.value = value;
  return arg;
}

KernelArg KernelArg::enumerator(StringRef cType, int64_t value) {
  KernelArg arg(Kind::Enum);
  arg.text = cType.str();
  arg.integer = value;
  return arg;
}

KernelArg
KernelArg::params(StringRef cType,
                  ArrayRef<std::pair<StringRef, KernelArg>> fields) {
  KernelArg arg(Kind::Struct);
  arg.text = cType.str();
  auto named = std::make_shared<std::vector<std::pair<std::string, KernelArg>>>();
  for (const auto &[name, value] : fields) {
    assert((value.kind == Kind::Integer || value.kind == Kind::Enum ||
            value.kind == Kind::Real) &&
           "a params struct holds scalars");
    named->emplace_back(name.str(), value);
  }
  arg.fields = std::move(named);
  return arg;
}

KernelArg KernelArg::advancedBy(Value index,
                                std::optional<int64_t> elementBytes) const {
  KernelArg arg = *this;
  arg.offset = index;
  arg.offsetElementBytes = elementBytes;
  return arg;
}

KernelCall mlir::braid::copyCall(Value to, Value from) {
  return {"braid_rt_copy", {to, from, getTensorBytes(from.getType())}};
}

std::string mlir::braid::formatReal(double value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::format("%.17g", value);
  return text;
}
