// SPDX-License-Identifier: MIT
// The emulated mlx5 scheduling contract: argument rules, capabilities, return conventions.
#include "tests/doubles/mlx5_emulation.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

namespace ibqos::host {

namespace {

constexpr uint32_t AllFlags =
    MLX5DV_SCHED_ELEM_ATTR_FLAGS_BW_SHARE | MLX5DV_SCHED_ELEM_ATTR_FLAGS_MAX_AVG_BW;

struct Element {
    EmulatedMlx5Device::State* device = nullptr;
    EmulatedElement info;
};

}  // namespace

struct EmulatedMlx5Device::State {
    std::string name;
    EmulatedMlx5Caps caps;
    ibv_device device{};
    ibv_context context{};
    std::vector<std::unique_ptr<Element>> elements;  // never freed before the device: see crash()
    std::vector<std::unique_ptr<ibv_qp>> qps;
    std::map<uint32_t, EmulatedAttachment> attachments;
    std::vector<std::string> calls;
};

namespace {

// The process-wide table behind the free functions. Never destroyed: devices owned by
// other static objects may be destroyed after it at exit.
struct Registry {
    std::mutex mutex;
    std::map<const ibv_context*, EmulatedMlx5Device::State*> devices;
    std::set<const void*> elementPointers;
};

Registry& registry() {
    static Registry* r = new Registry;
    return *r;
}

// The real library dereferences before it checks: such a call would crash the process.
[[noreturn]] void crash(const char* call, const char* what) {
    std::fprintf(stderr, "emulated libmlx5: %s: %s (the real library would crash here)\n", call,
                 what);
    std::abort();
}

EmulatedMlx5Device::State* deviceOf(const ibv_context* context, const char* call) {
    if (!context) crash(call, "NULL context");
    auto it = registry().devices.find(context);
    if (it == registry().devices.end()) crash(call, "a context that is not an emulated device");
    return it->second;
}

Element* elementOf(const void* p, const char* call) {
    if (!p) crash(call, "NULL scheduling element");
    if (!registry().elementPointers.count(p))
        crash(call, "a pointer that is not a scheduling element");
    auto* e = static_cast<Element*>(const_cast<void*>(p));
    if (!e->info.alive) crash(call, "a destroyed scheduling element (freed memory)");
    return e;
}

std::string describe(const mlx5dv_sched_attr* attr, const Element* parent) {
    if (!attr) return "attr=NULL";
    char buf[160];
    std::snprintf(
        buf, sizeof buf, "parent=%s flags=0x%x bw_share=%u max_avg_bw=%u comp_mask=0x%llx",
        parent ? std::to_string(parent->info.id).c_str() : "-", attr->flags, attr->bw_share,
        attr->max_avg_bw, static_cast<unsigned long long>(attr->comp_mask));
    return buf;
}

// sched_attr_valid() of libmlx5.
bool attrValid(const mlx5dv_sched_attr* attr, bool node) {
    if (!attr || attr->comp_mask || (attr->flags & ~AllFlags)) return false;
    if (node && !attr->parent && attr->flags) return false;
    if (!node && !attr->parent) return false;
    return true;
}

// attr_supported() of libmlx5.
bool attrSupported(const EmulatedMlx5Caps& caps, const mlx5dv_sched_attr* attr) {
    if ((attr->flags & MLX5DV_SCHED_ELEM_ATTR_FLAGS_BW_SHARE) && !caps.bwShare) return false;
    if ((attr->flags & MLX5DV_SCHED_ELEM_ATTR_FLAGS_MAX_AVG_BW) && !caps.rateLimit) return false;
    return true;
}

unsigned depthOf(const EmulatedMlx5Device::State& s, const Element* e) {
    unsigned depth = 1;
    for (unsigned p = e->info.parent; p; p = s.elements[p - 1]->info.parent) ++depth;
    return depth;
}

void* create(ibv_context* context, const mlx5dv_sched_attr* attr, bool node) {
    std::lock_guard lock(registry().mutex);
    const char* call = node ? "mlx5dv_sched_node_create" : "mlx5dv_sched_leaf_create";
    auto* s = deviceOf(context, call);
    Element* parent = attr && attr->parent ? elementOf(attr->parent, call) : nullptr;
    std::string line = std::string(node ? "node_create " : "leaf_create ") + describe(attr, parent);
    auto fail = [&](int error, const char* why) -> void* {
        s->calls.push_back(line + " -> NULL errno=" + std::strerror(error) + " (" + why + ")");
        errno = error;
        return nullptr;
    };
    if (!s->caps.mlx5) return fail(EOPNOTSUPP, "not an mlx5 context");
    if (!attrValid(attr, node)) return fail(EINVAL, "invalid attributes");
    if (node && !s->caps.qos) return fail(EOPNOTSUPP, "no QoS scheduling capability");
    if (!attrSupported(s->caps, attr)) return fail(EOPNOTSUPP, "flag not supported by the device");
    // Firmware answers (modelled): a parent of another context is an unknown element id; a
    // leaf cannot be a parent; a tree deeper than the device allows is refused.
    if (parent && parent->device != s) return fail(EINVAL, "parent of another context (modelled)");
    if (parent && parent->info.leaf) return fail(EINVAL, "parent is a leaf (modelled)");
    auto element = std::make_unique<Element>();
    element->device = s;
    element->info.id = static_cast<unsigned>(s->elements.size() + 1);
    element->info.leaf = !node;
    element->info.parent = parent ? parent->info.id : 0;
    element->info.flags = attr->flags;
    element->info.bwShare =
        attr->flags & MLX5DV_SCHED_ELEM_ATTR_FLAGS_BW_SHARE ? attr->bw_share : 0;
    element->info.maxAvgBw =
        attr->flags & MLX5DV_SCHED_ELEM_ATTR_FLAGS_MAX_AVG_BW ? attr->max_avg_bw : 0;
    if (s->caps.maxDepth && depthOf(*s, element.get()) > s->caps.maxDepth) {
        return fail(EINVAL, "deeper than the device's tree (modelled)");
    }
    Element* p = element.get();
    s->elements.push_back(std::move(element));
    registry().elementPointers.insert(p);
    s->calls.push_back(line + " -> " + std::to_string(p->info.id));
    return p;
}

int modify(void* target, const mlx5dv_sched_attr* attr, bool node) {
    std::lock_guard lock(registry().mutex);
    const char* call = node ? "mlx5dv_sched_node_modify" : "mlx5dv_sched_leaf_modify";
    Element* e = elementOf(target, call);
    auto* s = e->device;
    Element* parent = attr && attr->parent ? elementOf(attr->parent, call) : nullptr;
    std::string line = std::string(node ? "node_modify " : "leaf_modify ") +
                       std::to_string(e->info.id) + " " + describe(attr, parent);
    auto result = [&](int error, const char* why) {
        s->calls.push_back(line + " -> " +
                           (error ? std::string(std::strerror(error)) + " (" + why + ")" : "0"));
        if (error) errno = error;
        return error;
    };
    if (!s->caps.mlx5) return result(EOPNOTSUPP, "not an mlx5 context");
    if (e->info.leaf == node) return result(EINVAL, "wrong kind of element (modelled)");
    if (!attrValid(attr, node)) return result(EINVAL, "invalid attributes");
    if (!attrSupported(s->caps, attr))
        return result(EOPNOTSUPP, "flag not supported by the device");
    if (attr->flags & MLX5DV_SCHED_ELEM_ATTR_FLAGS_BW_SHARE) e->info.bwShare = attr->bw_share;
    if (attr->flags & MLX5DV_SCHED_ELEM_ATTR_FLAGS_MAX_AVG_BW) e->info.maxAvgBw = attr->max_avg_bw;
    return result(0, "");
}

int destroy(void* target, bool node) {
    std::lock_guard lock(registry().mutex);
    const char* call = node ? "mlx5dv_sched_node_destroy" : "mlx5dv_sched_leaf_destroy";
    Element* e = elementOf(target, call);
    auto* s = e->device;
    std::string line =
        std::string(node ? "node_destroy " : "leaf_destroy ") + std::to_string(e->info.id);
    auto result = [&](int error, const char* why) {
        s->calls.push_back(line + " -> " +
                           (error ? std::string(std::strerror(error)) + " (" + why + ")" : "0"));
        return error;
    };
    if (!s->caps.mlx5) return result(EOPNOTSUPP, "not an mlx5 context");
    if (e->info.leaf == node) return result(EINVAL, "wrong kind of element (modelled)");
    // The library does not track children; the firmware refuses to destroy an element that
    // still has children or QPs (modelled as EBUSY).
    for (const auto& other : s->elements) {
        if (other->info.alive && other->info.parent == e->info.id) {
            return result(EBUSY, "element still has children (modelled)");
        }
    }
    for (const auto& [qpn, a] : s->attachments) {
        if (a.requestor == e->info.id || a.responder == e->info.id) {
            return result(EBUSY, "QPs still attached (modelled)");
        }
    }
    e->info.alive = false;  // the library frees it: any later use is a use after free
    return result(0, "");
}

mlx5dv_sched_node* nodeCreate(ibv_context* c, const mlx5dv_sched_attr* a) {
    return static_cast<mlx5dv_sched_node*>(create(c, a, true));
}
mlx5dv_sched_leaf* leafCreate(ibv_context* c, const mlx5dv_sched_attr* a) {
    return static_cast<mlx5dv_sched_leaf*>(create(c, a, false));
}
int nodeModify(mlx5dv_sched_node* n, const mlx5dv_sched_attr* a) { return modify(n, a, true); }
int leafModify(mlx5dv_sched_leaf* l, const mlx5dv_sched_attr* a) { return modify(l, a, false); }
int nodeDestroy(mlx5dv_sched_node* n) { return destroy(n, true); }
int leafDestroy(mlx5dv_sched_leaf* l) { return destroy(l, false); }

int modifyQpSchedElem(ibv_qp* qp, const mlx5dv_sched_leaf* requestor,
                      const mlx5dv_sched_leaf* responder) {
    std::lock_guard lock(registry().mutex);
    const char* call = "mlx5dv_modify_qp_sched_elem";
    if (!qp) crash(call, "NULL QP");
    auto* s = deviceOf(qp->context, call);
    Element* req = requestor ? elementOf(requestor, call) : nullptr;
    Element* resp = responder ? elementOf(responder, call) : nullptr;
    std::string line = "qp_sched_elem qpn=" + std::to_string(qp->qp_num) +
                       " requestor=" + (req ? std::to_string(req->info.id) : "-") +
                       " responder=" + (resp ? std::to_string(resp->info.id) : "-");
    auto result = [&](int error, const char* why) {
        s->calls.push_back(line + " -> " +
                           (error ? std::string(std::strerror(error)) + " (" + why + ")" : "0"));
        return error;
    };
    if (!s->caps.mlx5) return result(EOPNOTSUPP, "not an mlx5 context");
    switch (qp->qp_type) {
        case IBV_QPT_UC:
        case IBV_QPT_UD:
            if (responder) return result(EINVAL, "UC/UD QPs take no responder element");
            [[fallthrough]];
        case IBV_QPT_RC:
            if (!s->caps.qpScheduling) return result(EOPNOTSUPP, "no QP scheduling capability");
            if (qp->state != IBV_QPS_INIT && qp->state != IBV_QPS_RTS) {
                return result(EOPNOTSUPP, "QP is neither in INIT nor in RTS");
            }
            break;
        case IBV_QPT_RAW_PACKET:
            if (responder) return result(EINVAL, "raw packet QPs take no responder element");
            if (qp->state != IBV_QPS_RTS || !s->caps.sqScheduling) {
                return result(EOPNOTSUPP, "raw packet QP not in RTS or no SQ scheduling");
            }
            break;
        default:
            return result(EOPNOTSUPP, "QP type not supported");
    }
    for (Element* leaf : {req, resp}) {
        if (leaf && leaf->device != s) return result(EINVAL, "leaf of another context (modelled)");
        if (leaf && !leaf->info.leaf) return result(EINVAL, "element is a node (modelled)");
    }
    if (!req && !resp) {
        s->attachments.erase(qp->qp_num);
    } else {
        s->attachments[qp->qp_num] = {req ? req->info.id : 0, resp ? resp->info.id : 0};
    }
    return result(0, "");
}

}  // namespace

EmulatedMlx5Device::EmulatedMlx5Device(std::string name, EmulatedMlx5Caps caps)
    : state_(std::make_unique<State>()) {
    state_->name = std::move(name);
    state_->caps = caps;
    std::snprintf(state_->device.name, sizeof state_->device.name, "%s", state_->name.c_str());
    state_->device.node_type = IBV_NODE_CA;
    state_->device.transport_type = IBV_TRANSPORT_IB;
    state_->context.device = &state_->device;
    std::lock_guard lock(registry().mutex);
    registry().devices[&state_->context] = state_.get();
}

EmulatedMlx5Device::~EmulatedMlx5Device() {
    std::lock_guard lock(registry().mutex);
    registry().devices.erase(&state_->context);
    for (const auto& e : state_->elements) registry().elementPointers.erase(e.get());
}

ibv_context* EmulatedMlx5Device::context() { return &state_->context; }
const std::string& EmulatedMlx5Device::name() const { return state_->name; }

ibv_qp* EmulatedMlx5Device::createQp(uint32_t qpNum, ibv_qp_type type, ibv_qp_state state) {
    auto qp = std::make_unique<ibv_qp>();
    qp->context = &state_->context;
    qp->qp_num = qpNum;
    qp->qp_type = type;
    qp->state = state;
    std::lock_guard lock(registry().mutex);
    state_->qps.push_back(std::move(qp));
    return state_->qps.back().get();
}

std::vector<EmulatedElement> EmulatedMlx5Device::elements() const {
    std::lock_guard lock(registry().mutex);
    std::vector<EmulatedElement> out;
    for (const auto& e : state_->elements) out.push_back(e->info);
    return out;
}

size_t EmulatedMlx5Device::liveElements() const {
    std::lock_guard lock(registry().mutex);
    size_t n = 0;
    for (const auto& e : state_->elements) n += e->info.alive;
    return n;
}

std::map<uint32_t, EmulatedAttachment> EmulatedMlx5Device::attachments() const {
    std::lock_guard lock(registry().mutex);
    return state_->attachments;
}

std::vector<std::string> EmulatedMlx5Device::calls() const {
    std::lock_guard lock(registry().mutex);
    return state_->calls;
}

unsigned EmulatedMlx5Device::idOf(const void* element) const {
    if (!element) return 0;
    std::lock_guard lock(registry().mutex);
    if (!registry().elementPointers.count(element)) return 0;
    return static_cast<const Element*>(element)->info.id;
}

const Mlx5SchedApi& emulatedMlx5Api() {
    static const Mlx5SchedApi api{nodeCreate,  leafCreate,  nodeModify,       leafModify,
                                  nodeDestroy, leafDestroy, modifyQpSchedElem};
    return api;
}

}  // namespace ibqos::host
