// SPDX-License-Identifier: MIT
// Unit tests of the scheduling backends: the simulated scheduler's rates, the mlx5 backend
// against the emulated contract, and the real device when there is one.
#include <catch2/catch.hpp>

#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <numeric>

#include "host-sched/sched/sched_mlx5.hpp"
#include "host-sched/sched/sched_simulated.hpp"
#include "tests/doubles/mlx5_emulation.hpp"
#include "tests/host-sched/host_policies.hpp"

using namespace ibqos;
using namespace ibqos::host;

namespace {

using test::planOf;

std::string leaf(const std::string& name, int bw, int max = 0, const std::string& parent = "",
                 int sl = -1) {
    std::string s = " sched-leaf\n  name: " + name + "\n";
    if (bw) s += "  bw-share: " + std::to_string(bw) + "\n";
    if (max) s += "  max-avg-bw: " + std::to_string(max) + "\n";
    if (!parent.empty()) s += "  parent: " + parent + "\n";
    if (sl >= 0) s += "  sl: " + std::to_string(sl) + "\n";
    return s + " end-sched-leaf\n";
}

std::string node(const std::string& name, int bw, int max = 0, const std::string& parent = "") {
    std::string s = " sched-node\n  name: " + name + "\n";
    if (bw) s += "  bw-share: " + std::to_string(bw) + "\n";
    if (max) s += "  max-avg-bw: " + std::to_string(max) + "\n";
    if (!parent.empty()) s += "  parent: " + parent + "\n";
    return s + " end-sched-node\n";
}

double rateOf(const HostPlan& plan, const std::vector<double>& rates, const std::string& name) {
    return rates[*plan.find(name)];
}

// The seed 000 example: g1 70 %, g2 30 % capped at 4096 Mbit/s.
const std::string seedExample = leaf("g1", 7, 0, "", 1) + leaf("g2", 3, 4096, "", 2);

}  // namespace

TEST_CASE("siblings share the link by their weights", "[host-sched][simulated]") {
    HostPlan plan = planOf(leaf("a", 70) + leaf("b", 30));
    auto rates = simulateRates(plan, 10000, {});
    CHECK(rateOf(plan, rates, "a") == Approx(7000));
    CHECK(rateOf(plan, rates, "b") == Approx(3000));
}

TEST_CASE("a capped leaf stops at its max-avg-bw and the others take the rest",
          "[host-sched][simulated]") {
    HostPlan plan = planOf(seedExample);
    auto rates = simulateRates(plan, 40000, {});
    CHECK(rateOf(plan, rates, "g2") == Approx(4096));
    CHECK(rateOf(plan, rates, "g1") == Approx(40000 - 4096));
    // Below the cap the weights decide.
    rates = simulateRates(plan, 10000, {});
    CHECK(rateOf(plan, rates, "g1") == Approx(7000));
    CHECK(rateOf(plan, rates, "g2") == Approx(3000));
}

TEST_CASE("bandwidth a leaf does not use is shared among the others by weight",
          "[host-sched][simulated]") {
    HostPlan plan = planOf(leaf("a", 50) + leaf("b", 30) + leaf("c", 20));
    std::vector<std::optional<double>> demand(3);
    demand[*plan.find("a")] = 1000;
    auto rates = simulateRates(plan, 10000, demand);
    CHECK(rateOf(plan, rates, "a") == Approx(1000));
    CHECK(rateOf(plan, rates, "b") == Approx(9000 * 0.6));
    CHECK(rateOf(plan, rates, "c") == Approx(9000 * 0.4));
    demand[*plan.find("b")] = 0;  // idle
    rates = simulateRates(plan, 10000, demand);
    CHECK(rateOf(plan, rates, "b") == 0);
    CHECK(rateOf(plan, rates, "c") == Approx(9000));
}

TEST_CASE("a node's weight and cap bound its whole subtree", "[host-sched][simulated]") {
    HostPlan plan = planOf(node("tenant", 60, 30000) + leaf("x", 1, 0, "tenant") +
                           leaf("y", 3, 0, "tenant") + leaf("z", 40));
    auto rates = simulateRates(plan, 100000, {});
    CHECK(rateOf(plan, rates, "tenant") == Approx(30000));
    CHECK(rateOf(plan, rates, "x") == Approx(7500));
    CHECK(rateOf(plan, rates, "y") == Approx(22500));
    CHECK(rateOf(plan, rates, "z") == Approx(70000));
    // An idle subtree gives its share away.
    std::vector<std::optional<double>> demand(plan.elements().size());
    demand[*plan.find("x")] = 0;
    demand[*plan.find("y")] = 0;
    rates = simulateRates(plan, 100000, demand);
    CHECK(rateOf(plan, rates, "tenant") == 0);
    CHECK(rateOf(plan, rates, "z") == Approx(100000));
}

TEST_CASE("elements without bw-share get the smallest weight", "[host-sched][simulated]") {
    HostPlan plan = planOf(leaf("weighted", 3) + leaf("default", 0));
    auto rates = simulateRates(plan, 4000, {});
    CHECK(rateOf(plan, rates, "weighted") == Approx(3000));
    CHECK(rateOf(plan, rates, "default") == Approx(1000));
}

TEST_CASE("with a thousand leaves under caps the link is used and never exceeded",
          "[host-sched][simulated]") {
    std::string text;
    for (int n = 0; n < 10; ++n) text += node("n" + std::to_string(n), 1 + n, n % 3 ? 0 : 20000);
    for (int l = 0; l < 1000; ++l) {
        text += leaf("l" + std::to_string(l), 1 + l % 100, l % 7 ? 0 : 300,
                     "n" + std::to_string(l % 10));
    }
    HostPlan plan = planOf(text);
    auto rates = simulateRates(plan, 400000, {});
    double leaves = 0;
    for (size_t i = 0; i < plan.elements().size(); ++i) {
        const PlanElement& e = plan.elements()[i];
        if (e.maxAvgBw) CHECK(rates[i] <= e.maxAvgBw + 1e-6);
        if (e.leaf) leaves += rates[i];
    }
    CHECK(leaves == Approx(400000));
}

TEST_CASE("the simulated backend keeps attachments by the device's rules",
          "[host-sched][simulated]") {
    HostPlan plan = planOf(seedExample);
    SimulatedSchedBackend backend;
    REQUIRE(backend.build(plan).ok());
    size_t g1 = *plan.find("g1");
    CHECK(backend.attach({nullptr, 10, QpType::Rc}, g1).ok());
    CHECK(backend.attach({nullptr, 11, QpType::Ud}, g1).ok());
    CHECK(backend.attach({nullptr, 12, QpType::Other}, g1).error == EOPNOTSUPP);
    CHECK(backend.leafOf(10) == g1);
    CHECK(backend.teardown().error == EBUSY);
    CHECK(backend.detach({nullptr, 10, QpType::Rc}).ok());
    CHECK(backend.detach({nullptr, 11, QpType::Ud}).ok());
    CHECK(backend.teardown().ok());
    CHECK_FALSE(backend.built());
}

TEST_CASE("the emulated library enforces the documented argument rules and return conventions",
          "[host-sched][mlx5-emulation]") {
    EmulatedMlx5Device device("mlx5_0");
    const Mlx5SchedApi& api = emulatedMlx5Api();
    mlx5dv_sched_attr attr{};
    attr.flags = MLX5DV_SCHED_ELEM_ATTR_FLAGS_BW_SHARE;  // flags on the root
    errno = 0;
    CHECK(api.nodeCreate(device.context(), &attr) == nullptr);
    CHECK(errno == EINVAL);
    attr = {};
    attr.comp_mask = 1;
    CHECK(api.nodeCreate(device.context(), &attr) == nullptr);
    CHECK(errno == EINVAL);
    attr = {};
    attr.flags = 0x4;  // an unknown flag
    CHECK(api.nodeCreate(device.context(), &attr) == nullptr);
    CHECK(errno == EINVAL);
    attr = {};
    CHECK(api.leafCreate(device.context(), &attr) == nullptr);  // a leaf needs a parent
    CHECK(errno == EINVAL);
    mlx5dv_sched_node* root = api.nodeCreate(device.context(), &attr);
    REQUIRE(root);
    attr.parent = root;
    attr.flags = MLX5DV_SCHED_ELEM_ATTR_FLAGS_MAX_AVG_BW;
    attr.max_avg_bw = 1000;
    mlx5dv_sched_leaf* leaf = api.leafCreate(device.context(), &attr);
    REQUIRE(leaf);
    attr.comp_mask = 2;
    errno = 0;
    CHECK(api.leafModify(leaf, &attr) == EINVAL);  // a positive errno, not -1
    CHECK(api.nodeDestroy(root) == EBUSY);         // children first
    CHECK(api.leafDestroy(leaf) == 0);
    CHECK(api.nodeDestroy(root) == 0);
    CHECK(device.liveElements() == 0);

    EmulatedMlx5Device noQos("mlx5_1", {.qos = false});
    attr = {};
    CHECK(api.nodeCreate(noQos.context(), &attr) == nullptr);
    CHECK(errno == EOPNOTSUPP);
}

TEST_CASE(
    "the mlx5 backend creates the root first with no attributes, then parents before children",
    "[host-sched][mlx5]") {
    HostPlan plan = planOf(node("tenant", 60, 30000) + leaf("x", 10, 0, "tenant", 1) +
                           leaf("y", 0, 5000, "", 2));
    EmulatedMlx5Device device("mlx5_0");
    Mlx5SchedBackend backend(device.context(), emulatedMlx5Api());
    REQUIRE(backend.build(plan).ok());
    auto elements = device.elements();
    REQUIRE(elements.size() == 4);
    CHECK(elements[0].parent == 0);  // the root
    CHECK(elements[0].flags == 0);
    CHECK_FALSE(elements[0].leaf);
    CHECK(elements[1].parent == elements[0].id);  // tenant
    CHECK(elements[1].bwShare == 60);
    CHECK(elements[1].maxAvgBw == 30000);
    CHECK(elements[2].leaf);  // x under tenant, only BW_SHARE flagged
    CHECK(elements[2].parent == elements[1].id);
    CHECK(elements[2].flags == MLX5DV_SCHED_ELEM_ATTR_FLAGS_BW_SHARE);
    CHECK(elements[3].parent == elements[0].id);  // y under the root, only MAX_AVG_BW flagged
    CHECK(elements[3].flags == MLX5DV_SCHED_ELEM_ATTR_FLAGS_MAX_AVG_BW);
    CHECK(backend.teardown().ok());
    CHECK(device.liveElements() == 0);
}

TEST_CASE("QPs attach as requestor and responder by type, and only in INIT or RTS",
          "[host-sched][mlx5]") {
    HostPlan plan = planOf(leaf("x", 10, 0, "", 1));
    EmulatedMlx5Device device("mlx5_0");
    Mlx5SchedBackend backend(device.context(), emulatedMlx5Api());
    REQUIRE(backend.build(plan).ok());
    size_t x = *plan.find("x");
    unsigned leafId = device.elements().back().id;
    ibv_qp* rc = device.createQp(0x10, IBV_QPT_RC);
    ibv_qp* ud = device.createQp(0x11, IBV_QPT_UD);
    ibv_qp* rtr = device.createQp(0x12, IBV_QPT_RC, IBV_QPS_RTR);
    CHECK(backend.attach({rc, 0x10, QpType::Rc}, x).ok());
    CHECK(backend.attach({ud, 0x11, QpType::Ud}, x).ok());
    SchedStatus late = backend.attach({rtr, 0x12, QpType::Rc}, x);
    CHECK(late.error == EOPNOTSUPP);
    CHECK(late.message.find("mlx5dv_modify_qp_sched_elem(QP 18, 'x')") != std::string::npos);
    auto attached = device.attachments();
    CHECK(attached[0x10].requestor == leafId);
    CHECK(attached[0x10].responder == leafId);
    CHECK(attached[0x11].requestor == leafId);
    CHECK(attached[0x11].responder == 0);
    CHECK(attached.count(0x12) == 0);

    // Leaves with QPs cannot go; detached, they can.
    CHECK(backend.teardown().error == EBUSY);
    CHECK(backend.built());
    CHECK(backend.detach({rc, 0x10, QpType::Rc}).ok());
    CHECK(backend.detach({ud, 0x11, QpType::Ud}).ok());
    CHECK(backend.teardown().ok());
    CHECK(device.liveElements() == 0);
}

TEST_CASE(
    "a device without the capability fails the build with a message and leaves nothing behind",
    "[host-sched][mlx5]") {
    HostPlan plan = planOf(leaf("x", 10, 0, "", 1) + leaf("capped", 10, 100, "", 2));
    EmulatedMlx5Device noQos("mlx5_0", {.qos = false});
    Mlx5SchedBackend a(noQos.context(), emulatedMlx5Api());
    SchedStatus s = a.build(plan);
    CHECK(s.error == EOPNOTSUPP);
    CHECK(s.message.find("mlx5dv_sched_node_create(root)") != std::string::npos);
    CHECK(s.message.find("not supported") != std::string::npos);

    EmulatedMlx5Device noRateLimit("mlx5_1", {.rateLimit = false});
    Mlx5SchedBackend b(noRateLimit.context(), emulatedMlx5Api());
    s = b.build(plan);
    CHECK(s.error == EOPNOTSUPP);
    CHECK(s.message.find("mlx5dv_sched_leaf_create('capped')") != std::string::npos);
    CHECK_FALSE(b.built());
    CHECK(noRateLimit.liveElements() == 0);  // the root and 'x' were destroyed again

    EmulatedMlx5Device shallow("mlx5_2", {.maxDepth = 2});
    Mlx5SchedBackend c(shallow.context(), emulatedMlx5Api());
    HostPlan deep = planOf(node("n", 1) + node("m", 1, 0, "n") + leaf("deep", 1, 0, "m", 3));
    s = c.build(deep);
    CHECK(s.error == EINVAL);
    CHECK(shallow.liveElements() == 0);
}

TEST_CASE("on a host with an mlx5 device the real library builds and removes the tree",
          "[host-sched][mlx5][device]") {
    int count = 0;
    errno = 0;
    ibv_device** list = ibv_get_device_list(&count);
    if (!list || count == 0) {
        // No RDMA device here (ENOSYS without the kernel's RDMA stack): nothing to check.
        WARN("skipped: no RDMA device (ibv_get_device_list: "
             << (list ? "empty" : std::strerror(errno)) << ")");
        if (list) ibv_free_device_list(list);
        SUCCEED();
        return;
    }
    ibv_device* mlx5 = nullptr;
    for (int i = 0; i < count && !mlx5; ++i) {
        if (mlx5dv_is_supported(list[i])) mlx5 = list[i];
    }
    if (!mlx5) {
        WARN("skipped: no mlx5 device among " << count);
        ibv_free_device_list(list);
        SUCCEED();
        return;
    }
    mlx5dv_context_attr attr{};
    attr.flags = MLX5DV_CONTEXT_FLAGS_DEVX;
    ibv_context* context = mlx5dv_open_device(mlx5, &attr);
    ibv_free_device_list(list);
    REQUIRE(context);
    Mlx5SchedBackend backend(context, linkedMlx5Api());
    SchedStatus s = backend.build(planOf(seedExample));
    if (s.error == EOPNOTSUPP) {
        WARN("skipped: " << s.message);
    } else {
        CHECK(s.ok());
        CHECK(backend.teardown().ok());
    }
    ibv_close_device(context);
}
