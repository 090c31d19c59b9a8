// SPDX-License-Identifier: MIT
// Preload: the library's state in one process (its configuration, the QPs it knows, the
// scheduling trees, the agent connection, SL enforcement) and what each interposed call does
// with it.
#pragma once

#include <infiniband/verbs.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "host-sched/agent/agent_protocol.hpp"
#include "host-sched/plan/host_plan.hpp"
#include "host-sched/preload/agent_link.hpp"
#include "host-sched/preload/devx_command.hpp"
#include "host-sched/preload/once_log.hpp"
#include "host-sched/preload/sl_enforcement.hpp"
#include "host-sched/sched/mlx5_api.hpp"
#include "host-sched/sched/sched_backend.hpp"

namespace ibqos::host {

// What the library knows about one QP of the application.
struct QpRecord {
    std::string device;
    uint8_t port = 0;
    uint32_t qpNum = 0;
    QpType type = QpType::Rc;
    std::optional<uint8_t> sl;
    std::optional<size_t> leaf;
    bool attached = false;
    uint16_t dlid = 0;
    std::optional<SlMode> mode;  // set once the library is configured
    std::optional<uint8_t> appSl;
    std::optional<uint8_t> saSl;
    SlOutcome outcome = SlOutcome::None;
    bool atRtr = false;     // reached RTR: the agent hears of it
    bool reported = false;  // the agent heard of it on the current connection
};

// What a QP's move to RTR says, however it was made (ibv_modify_qp or a DEVX command).
struct RtrFacts {
    const void* key = nullptr;  // the QP in this process: its ibv_qp or its DEVX object
    ibv_qp* verbsQp = nullptr;  // a verbs QP a scheduling leaf can take, or null
    ibv_context* context = nullptr;
    uint32_t qpNum = 0;
    QpType type = QpType::Rc;
    std::optional<ibv_ah_attr> av;      // the transition's address vector, when it has one
    bool decide = false;                // audit or enforce: the SA decides this vector
    std::optional<uint16_t> pkeyIndex;  // the QP's P_Key index, when known
    bool fromCm = false;                // librdmacm made the vector from a PathRecord
};

// A QP made with a DEVX CREATE_QP, as the library saw it made and brought to INIT.
struct DevxQp {
    ibv_context* context = nullptr;
    uint32_t qpNum = 0;
    uint8_t st = devx::StRc;
    uint8_t port = 0;
    std::optional<uint16_t> pkeyIndex;
};

// One per process, never destroyed (applications may call verbs from their exit handlers).
// Its lock guards everything here and is held for short steps only: never while waiting for
// the agent, so one thread's cold SL lookup delays no other thread's verbs call.
class Preload {
  public:
    static Preload& instance();

    // Returns the SL the real call must use instead of the application's (enforce mode).
    std::optional<uint8_t> beforeRtr(ibv_qp* qp, const ibv_qp_attr* attr, int mask);
    std::optional<uint8_t> beforeCreateAh(ibv_context* context, const ibv_ah_attr* attr);
    void afterRtr(const void* qp);
    // DEVX: a QP made with CREATE_QP (obj, its DEVX object), any QP command before it goes to
    // the device (returns the SL an INIT2RTR_QP must carry instead), one destroyed.
    void devxCreated(const void* obj, ibv_context* context, const devx::QpCommand& create,
                     uint32_t qpNum);
    std::optional<uint8_t> beforeDevxCommand(const void* key, ibv_qp* verbsQp,
                                             const devx::QpCommand& command);
    void devxDestroyed(const void* obj);
    void cmQp(ibv_qp* qp);
    void cmVector(const ibv_ah_attr& av);
    // rdma_init_qp_attr filled these attributes for an RTR on this thread.
    static void cmAttributes(const ibv_qp_attr* attr);
    void beforeDestroy(ibv_qp* qp);
    void afterDestroy(const void* qp, int rc);
    void beforeClose(ibv_context* context);

  private:
    Preload();
    static void prepareFork();
    static void parentAfterFork();
    static void childAfterFork();

    void configure();
    SchedBackend* treeOf(ibv_context* context);
    bool connectAgent();
    void send(QpRecord& record, MessageKind kind);
    bool sendMessage(const AgentMessage& m);
    // Finishes a decision begun under the lock: asks the agent when the decision needs it,
    // letting go of the lock for the wait (held again on return).
    SlDecision decide(std::unique_lock<std::mutex>& lock, const SlEnforcer::Begun& begun,
                      uint8_t appSl);
    // The decision and the leaf for a QP at RTR (the lock let go while the agent answers).
    std::optional<uint8_t> rtr(std::unique_lock<std::mutex>& lock, const RtrFacts& facts);

    std::mutex mutex_;
    bool configured_ = false;
    OnceLog logOnce_;
    std::optional<HostPlan> plan_;
    std::string backend_ = "mlx5";
    Mlx5SchedApi mlx5_;
    bool mlx5Ready_ = false;
    std::map<ibv_context*, std::unique_ptr<SchedBackend>> trees_;  // null: failed on it
    std::map<const void*, QpRecord> qps_;
    std::map<const void*, DevxQp> devxQps_;
    std::string socketPath_;
    AgentLink agent_;
    std::chrono::steady_clock::time_point nextConnect_{};
    SlEnforcer enforcer_{logOnce_};
    std::set<ibv_qp*> cmQps_;
    std::set<std::pair<uint16_t, uint8_t>> cmVectors_;
    std::deque<std::pair<uint16_t, uint8_t>> cmVectorOrder_;
};

}  // namespace ibqos::host
