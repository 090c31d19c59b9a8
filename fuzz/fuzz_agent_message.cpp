// SPDX-License-Identifier: MIT
// libFuzzer target: what preloaded clients may send the agent. Each input is read as one
// message (which must survive writing and reading again), then split at newlines into
// messages from two clients of an agent on simulated engines, which must keep its state whole
// and steer only the QPs the kernel (here a rule on QP numbers) says each client owns.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "host-sched/agent/agent_state.hpp"
#include "host-sched/agent/policy_plan.hpp"
#include "host-sched/pcc/pcc_simulated.hpp"

using namespace ibqos;
using namespace ibqos::host;

namespace {

// The kernel's answer, as a rule: QP numbers divisible by 7 are the kernel's, other odd ones
// pid 200's, even ones pid 100's.
class RuleQpOwners final : public QpOwners {
  public:
    QpOwner ownerOf(const std::string&, uint32_t qpNum) override {
        if (qpNum % 7 == 0) return {QpOwner::Kind::Kernel, 0, ""};
        return {QpOwner::Kind::Process, qpNum % 2 ? 200u : 100u, ""};
    }
};

// The plan of samples/policies/host-sched.conf: SLs 0-4 on leaves, slots 1 and 2.
HostPlan fuzzPlan() {
    std::string error;
    auto plan = loadHostPlan(SAMPLE_POLICY, error);
    if (!plan) std::abort();
    return *plan;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    static const HostPlan plan = fuzzPlan();
    std::string_view text(reinterpret_cast<const char*>(data), size);

    MessageError error;
    if (auto m = parseAgentMessage(text, error)) {
        std::string again = encodeAgentMessage(*m);
        auto back = parseAgentMessage(again, error);
        if (!back || !(*back == *m)) std::abort();
    } else if (error.offset > std::max<size_t>(size, MaxAgentMessage)) {
        std::abort();
    }

    AgentState state(
        plan,
        [](const std::string&, std::string&) { return std::make_unique<SimulatedPccEngine>(); }, 10,
        1, [](const std::string&) {});
    RuleQpOwners owners;
    state.setQpOwners(&owners);
    size_t start = 0;
    uint64_t client = 1;
    for (size_t i = 0; i <= text.size(); ++i) {
        if (i < text.size() && text[i] != '\n') continue;
        // Lines alternate between client 2 (pid 200) and client 1 (pid 100).
        client = client == 1 ? 2 : 1;
        state.handle(client, {client == 1 ? 100u : 200u, 0}, text.substr(start, i - start));
        start = i + 1;
    }
    for (const TrackedQp& qp : state.qps()) {
        // Nobody spoke for another, nor for the kernel.
        if (qp.pid != (qp.client == 1 ? 100u : 200u)) std::abort();
        if (qp.qpNum % 7 == 0 || qp.pid != (qp.qpNum % 2 ? 200u : 100u)) std::abort();
        if (qp.slot && (!qp.leaf || plan.elements()[*qp.leaf].pccSlot != qp.slot)) std::abort();
    }
    state.clientGone(1);
    state.clientGone(2);
    if (!state.qps().empty()) std::abort();
    return 0;
}
