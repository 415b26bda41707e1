//===- InitAllPasses.h - every pass braid-opt knows -------------*- C++ -*-===//
#ifndef BRAID_INITALLPASSES_H
#define BRAID_INITALLPASSES_H

namespace braid {
/// Registers Braid's passes and the upstream passes its pipelines use.
void registerAllPasses();
} // namespace braid

#endif // BRAID_INITALLPASSES_H
