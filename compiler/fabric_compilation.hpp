// SPDX-License-Identifier: MIT
// FabricCompilation: a policy compiled for one fabric, and the one place that runs the fabric
// stage (bind, then tables, then realizability) for ibqos check, compile, query and verify,
// the OpenSM plugin and the benchmarks. (ibqos check then asks the policy space what no request
// of the fabric reaches: policy-space/reachability.hpp.)
#pragma once

#include <cstdint>
#include <memory>

#include "common/diagnostics.hpp"
#include "compiler/bind.hpp"
#include "compiler/policy.hpp"
#include "compiler/tables.hpp"
#include "fabric/fabric.hpp"
#include "fabric/opensm_conf.hpp"

namespace ibqos {

// How far a compilation goes: binding only (all the SA's answers need), every port's tables,
// or the realizability checks too.
enum class CompileStage : uint8_t { Bind, Tables, Realizability };

class FabricCompilation {
  public:
    // Compiles the policy for the fabric, which the compilation keeps; problems go to
    // diagnostics. The policy is borrowed: it must outlive the compilation.
    static std::unique_ptr<FabricCompilation> compile(
        const Policy& policy, Fabric fabric, OpenSmConf conf, Diagnostics& diagnostics,
        CompileStage upTo = CompileStage::Realizability);
    // The bound policy points into the fabric: a compilation stays where it was made.
    FabricCompilation(const FabricCompilation&) = delete;
    FabricCompilation& operator=(const FabricCompilation&) = delete;

    const Policy& policy() const { return *bound_.policy; }
    const Fabric& fabric() const { return fabric_; }
    const OpenSmConf& conf() const { return conf_; }
    const BoundPolicy& bound() const { return bound_; }
    // Empty before CompileStage::Tables.
    const FabricTables& tables() const { return tables_; }

    // Seconds each stage took (0 for a stage not run).
    struct Timings {
        double bind = 0, tables = 0, realizability = 0;
    };
    const Timings& timings() const { return timings_; }

  private:
    FabricCompilation() = default;
    Fabric fabric_;
    OpenSmConf conf_;
    BoundPolicy bound_;
    FabricTables tables_;
    Timings timings_;
};

}  // namespace ibqos
