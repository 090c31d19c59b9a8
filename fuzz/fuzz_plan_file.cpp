// SPDX-License-Identifier: MIT
// libFuzzer target: the host plan file, which every preloaded process reads. Whatever it
// holds, reading it must end in a plan or an error naming the file and line; a plan read
// must be written back to the same text, keep the tree's order and SLs on their leaves, and
// build and tear down on the simulated scheduling backend as a process would.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "host-sched/plan/plan_file.hpp"
#include "host-sched/sched/sched_simulated.hpp"

using namespace ibqos;
using namespace ibqos::host;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view text(reinterpret_cast<const char*>(data), size);
    const std::string name = "host-plan";
    std::string error;
    std::optional<HostPlan> plan = parsePlanText(text, name, error);
    if (!plan) {
        if (error.rfind(name + ":", 0) != 0) std::abort();  // every error says where
        return 0;
    }
    // Written and read again, a plan is the same plan: the text is a fixed point.
    std::string written = planFileText(*plan, "fuzz");
    std::optional<HostPlan> again = parsePlanText(written, name, error);
    if (!again || planFileText(*again, "fuzz") != written) std::abort();

    const auto& elements = plan->elements();
    for (size_t i = 0; i < elements.size(); ++i) {
        const PlanElement& e = elements[i];
        // Every element after its parent, and only nodes are parents.
        if (e.parent && (*e.parent >= i || elements[*e.parent].leaf)) std::abort();
    }
    for (uint8_t sl = 0; sl < ib::SlCount; ++sl) {
        if (auto leaf = plan->leafForSl(sl)) {
            if (*leaf >= elements.size() || !elements[*leaf].leaf || !elements[*leaf].sls.test(sl))
                std::abort();
        }
    }
    for (const PlanSlot& slot : plan->slots()) {
        for (size_t leaf : slot.leaves) {
            if (leaf >= elements.size() || elements[leaf].pccSlot != slot.slot) std::abort();
        }
    }
    plan->enforcementFor({"fuzz", "./fuzz"});

    // What a preloaded process does with it.
    SimulatedSchedBackend backend;
    if (backend.build(*plan).ok()) {
        if (!backend.teardown().ok()) std::abort();
    }
    return 0;
}
