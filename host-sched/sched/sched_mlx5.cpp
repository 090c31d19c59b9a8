// SPDX-License-Identifier: MIT
// Mlx5SchedBackend: root first, parents before children, leaves before nodes on the way down.
#include "host-sched/sched/sched_mlx5.hpp"

#include <cerrno>
#include <cstring>

namespace ibqos::host {

namespace {

// Only the attributes the plan sets are flagged: an element without bw-share or max-avg-bw
// then also works on a device that lacks that capability.
mlx5dv_sched_attr attributesOf(const PlanElement& e, mlx5dv_sched_node* parent) {
    mlx5dv_sched_attr attr{};
    attr.parent = parent;
    if (e.bwShare) {
        attr.flags |= MLX5DV_SCHED_ELEM_ATTR_FLAGS_BW_SHARE;
        attr.bw_share = e.bwShare;
    }
    if (e.maxAvgBw) {
        attr.flags |= MLX5DV_SCHED_ELEM_ATTR_FLAGS_MAX_AVG_BW;
        attr.max_avg_bw = e.maxAvgBw;
    }
    return attr;
}

}  // namespace

std::string describeSchedError(int error) {
    switch (error) {
        case EINVAL:
            return "invalid argument (EINVAL): attributes the device refuses, a parent or leaf "
                   "it does not know, or a tree deeper than it allows";
        case EOPNOTSUPP:
            return "not supported (EOPNOTSUPP): not an mlx5 device, no transmit-scheduling "
                   "capability in this device or firmware, or a QP in a state or of a type "
                   "that cannot be attached";
        case ENOMEM:
            return "out of memory (ENOMEM)";
        case EBUSY:
            return "busy (EBUSY): the element still has children or QPs";
        case EPERM:
        case EACCES:
            return std::string(std::strerror(error)) +
                   ": the device context may lack DEVX (open it with mlx5dv_open_device)";
        default:
            return std::string(std::strerror(error)) + " (errno " + std::to_string(error) + ")";
    }
}

Mlx5SchedBackend::Mlx5SchedBackend(ibv_context* context, const Mlx5SchedApi& api)
    : context_(context), api_(api) {}

Mlx5SchedBackend::~Mlx5SchedBackend() {
    // Best effort: the owner should have called teardown() while the context was open.
    if (built()) teardown();
}

SchedStatus Mlx5SchedBackend::build(const HostPlan& plan) {
    if (built()) return {EEXIST, "the tree is already built"};
    if (!context_) return {EINVAL, "no device context"};
    const auto& elements = plan.elements();
    nodes_.assign(elements.size(), nullptr);
    leaves_.assign(elements.size(), nullptr);
    names_.clear();
    for (const PlanElement& e : elements) names_.push_back(e.name);

    // The root: no parent, no flags (the library refuses bw_share or max_avg_bw on it).
    mlx5dv_sched_attr rootAttr{};
    errno = 0;
    root_ = api_.nodeCreate(context_, &rootAttr);
    if (!root_) {
        int error = errno ? errno : EIO;
        return {error, "mlx5dv_sched_node_create(root): " + describeSchedError(error)};
    }
    for (size_t i = 0; i < elements.size(); ++i) {
        const PlanElement& e = elements[i];
        mlx5dv_sched_node* parent = e.parent ? nodes_[*e.parent] : root_;
        mlx5dv_sched_attr attr = attributesOf(e, parent);
        errno = 0;
        if (e.leaf) {
            leaves_[i] = api_.leafCreate(context_, &attr);
        } else {
            nodes_[i] = api_.nodeCreate(context_, &attr);
        }
        if (!leaves_[i] && !nodes_[i]) {
            int error = errno ? errno : EIO;
            SchedStatus status{error, std::string(e.leaf ? "mlx5dv_sched_leaf_create"
                                                         : "mlx5dv_sched_node_create") +
                                          "('" + e.name + "'): " + describeSchedError(error)};
            teardown();
            return status;
        }
    }
    return SchedStatus::success();
}

SchedStatus Mlx5SchedBackend::attach(const QpRef& qp, size_t leaf) {
    if (!built()) return {EINVAL, "no tree is built"};
    if (leaf >= leaves_.size() || !leaves_[leaf]) {
        return {EINVAL, "element " + std::to_string(leaf) + " is not a leaf of the tree"};
    }
    if (!qp.verbsQp) return {EINVAL, "no QP"};
    AttachRoles roles = attachRoles(qp.type);
    if (!roles.requestor) {
        return {EOPNOTSUPP, "QP " + std::to_string(qp.qpNum) + " of type " +
                                std::string(qpTypeName(qp.type)) + " cannot be scheduled"};
    }
    int rc = api_.modifyQpSchedElem(static_cast<ibv_qp*>(qp.verbsQp), leaves_[leaf],
                                    roles.responder ? leaves_[leaf] : nullptr);
    if (rc != 0) {
        return {rc, "mlx5dv_modify_qp_sched_elem(QP " + std::to_string(qp.qpNum) + ", '" +
                        names_[leaf] + "'): " + describeSchedError(rc)};
    }
    return SchedStatus::success();
}

SchedStatus Mlx5SchedBackend::detach(const QpRef& qp) {
    if (!qp.verbsQp) return {EINVAL, "no QP"};
    int rc = api_.modifyQpSchedElem(static_cast<ibv_qp*>(qp.verbsQp), nullptr, nullptr);
    if (rc != 0) {
        return {rc, "mlx5dv_modify_qp_sched_elem(QP " + std::to_string(qp.qpNum) +
                        ", detach): " + describeSchedError(rc)};
    }
    return SchedStatus::success();
}

SchedStatus Mlx5SchedBackend::teardown() {
    // Destroy frees only on success and the library does not track children: leaves first,
    // then nodes children-first (reverse creation order), the root last. An element that
    // cannot be destroyed is kept, and so are its ancestors.
    SchedStatus first;
    auto note = [&first](int rc, const std::string& what) {
        if (rc != 0 && first.ok()) first = {rc, what + ": " + describeSchedError(rc)};
    };
    for (size_t i = leaves_.size(); i-- > 0;) {
        if (!leaves_[i]) continue;
        int rc = api_.leafDestroy(leaves_[i]);
        note(rc, "mlx5dv_sched_leaf_destroy('" + names_[i] + "')");
        if (rc == 0) leaves_[i] = nullptr;
    }
    for (size_t i = nodes_.size(); i-- > 0;) {
        if (!nodes_[i]) continue;
        int rc = api_.nodeDestroy(nodes_[i]);
        note(rc, "mlx5dv_sched_node_destroy('" + names_[i] + "')");
        if (rc == 0) nodes_[i] = nullptr;
    }
    if (root_) {
        int rc = api_.nodeDestroy(root_);
        note(rc, "mlx5dv_sched_node_destroy(root)");
        if (rc == 0) root_ = nullptr;
    }
    return first;
}

}  // namespace ibqos::host
