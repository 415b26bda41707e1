//===- LaunchOptions.cpp - braid-run's options of how ranks start ---------===//
//
// --hostfile, --launcher and --store fill braid::driver::launchOptions()
// (Launch.h) as they are parsed, so that every way of running programs
// (training, generation, serving) starts its ranks the same way.
//
//===----------------------------------------------------------------------===//

#include "braid/Driver/Launch.h"

#include "llvm/Support/CommandLine.h"

using namespace llvm;
using braid::driver::launchOptions;

namespace {

cl::OptionCategory launchCategory("Launching ranks");

enum class Launcher { Mpirun, None };

cl::opt<std::string> hostfile(
    "hostfile",
    cl::desc("Machines for the ranks, as mpirun's --hostfile (a line per machine: "
             "NAME slots=N)"),
    cl::value_desc("file"), cl::cat(launchCategory),
    cl::cb<void, std::string>([](const std::string &file) { launchOptions().hostfile = file; }));

cl::opt<Launcher> launcher(
    "launcher", cl::desc("How several ranks start (default: mpirun)"),
    cl::values(clEnumValN(Launcher::Mpirun, "mpirun", "braid-run starts them under mpirun"),
               clEnumValN(Launcher::None, "none",
                          "build the programs and print each rank's command and environment "
                          "(BRAID_RANK, BRAID_WORLD_SIZE, BRAID_LOCAL_RANK, the store) for "
                          "srun, a Kubernetes job or any launcher")),
    cl::init(Launcher::Mpirun), cl::cat(launchCategory),
    cl::cb<void, Launcher>([](Launcher value) {
      launchOptions().printOnly = value == Launcher::None;
    }));

cl::opt<std::string> store(
    "store",
    cl::desc("With --launcher none: the directory, seen by every rank, through which the "
             "ranks find each other (default: a new temporary directory)"),
    cl::value_desc("dir"), cl::cat(launchCategory),
    cl::cb<void, std::string>([](const std::string &dir) { launchOptions().store = dir; }));

} // namespace
