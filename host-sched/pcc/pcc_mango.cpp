// SPDX-License-Identifier: MIT
// MangoPccEngine: seed 003's calls through dlopen/dlsym, statuses turned into messages.
#include "host-sched/pcc/pcc_mango.hpp"

#include <dlfcn.h>

#include <cerrno>
#include <cstdlib>

namespace ibqos::host {

struct MangoPccEngine::Api {
    void* handle = nullptr;
    decltype(&mango_pcc_create) create = nullptr;
    decltype(&mango_pcc_destroy) destroy = nullptr;
    decltype(&mango_pcc_ctrl_config) config = nullptr;
    decltype(&mango_pcc_ctrl_reg_algo_event) registerEvent = nullptr;
    decltype(&mango_pcc_ctrl_unreg_algo) unregister = nullptr;
    decltype(&mango_pcc_ctrl_apply_algo) apply = nullptr;
    decltype(&mango_pcc_ctrl_run) run = nullptr;
    decltype(&mango_pcc_ctrl_stop) stop = nullptr;
    decltype(&mango_pcc_params_register) paramsRegister = nullptr;
    decltype(&mango_pcc_walk_params) walkParams = nullptr;
    decltype(&mango_pcc_window_current_by_qp) window = nullptr;
};

namespace {

template <typename Fn>
bool lookUp(void* handle, const char* name, Fn& fn, std::string& missing) {
    fn = reinterpret_cast<Fn>(dlsym(handle, name));
    if (!fn && missing.empty()) missing = name;
    return fn != nullptr;
}

struct WalkContext {
    const PccParamVisitor* visit;
};

void walkTrampoline(const char* name, mango_pcc_param_type_e type, void* value, void* user) {
    (*static_cast<WalkContext*>(user)->visit)(name, type, value);
}

}  // namespace

std::string libmangoPath() {
    const char* path = std::getenv("IBQOS_LIBMANGO");
    return path && *path ? path : "libmango.so";
}

namespace {

// Loads the library and looks up every call; false with error set when one is missing.
bool loadApi(MangoPccEngine::Api& api, std::string& error) {
    std::string path = libmangoPath();
    api.handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!api.handle) {
        const char* reason = dlerror();
        error = path + " cannot be loaded: " + (reason ? reason : "unknown reason");
        return false;
    }
    std::string missing;
    void* h = api.handle;
    lookUp(h, "mango_pcc_create", api.create, missing);
    lookUp(h, "mango_pcc_destroy", api.destroy, missing);
    lookUp(h, "mango_pcc_ctrl_config", api.config, missing);
    lookUp(h, "mango_pcc_ctrl_reg_algo_event", api.registerEvent, missing);
    lookUp(h, "mango_pcc_ctrl_unreg_algo", api.unregister, missing);
    lookUp(h, "mango_pcc_ctrl_apply_algo", api.apply, missing);
    lookUp(h, "mango_pcc_ctrl_run", api.run, missing);
    lookUp(h, "mango_pcc_ctrl_stop", api.stop, missing);
    lookUp(h, "mango_pcc_params_register", api.paramsRegister, missing);
    lookUp(h, "mango_pcc_walk_params", api.walkParams, missing);
    lookUp(h, "mango_pcc_window_current_by_qp", api.window, missing);
    if (!missing.empty()) {
        error = path + " has no " + missing + " (not the documented PCC API)";
        dlclose(h);
        api.handle = nullptr;
        return false;
    }
    return true;
}

}  // namespace

bool libmangoAvailable(std::string& error) {
    MangoPccEngine::Api api;
    return loadApi(api, error);  // the library stays loaded, as an engine would keep it
}

std::unique_ptr<MangoPccEngine> MangoPccEngine::open(const std::string& device,
                                                     std::string& error) {
    auto api = std::make_unique<Api>();
    if (!loadApi(*api, error)) return nullptr;
    void* h = api->handle;
    mango_pcc_h pcc = nullptr;
    if (mango_status_e rc = api->create(device.c_str(), &pcc); rc != 0 || !pcc) {
        error = "mango_pcc_create(" + device + ") failed with status " + std::to_string(rc);
        dlclose(h);
        return nullptr;
    }
    return std::unique_ptr<MangoPccEngine>(new MangoPccEngine(std::move(api), pcc));
}

MangoPccEngine::MangoPccEngine(std::unique_ptr<Api> api, mango_pcc_h pcc)
    : api_(std::move(api)), pcc_(pcc) {}

MangoPccEngine::~MangoPccEngine() {
    if (running_) api_->stop(pcc_);
    api_->destroy(pcc_);
    // The library stays loaded: its threads may only now be winding down.
}

PccStatus MangoPccEngine::check(mango_status_e rc, const char* call) const {
    if (rc == 0) return PccStatus::success();
    return {rc < 0 ? rc : -rc, std::string(call) + " failed with status " + std::to_string(rc)};
}

PccStatus MangoPccEngine::configureInterval(uint32_t intervalUs) {
    mango_pcc_config_t config{};
    config.option = MANGO_PCC_CONFIG_INTERVAL;
    config.value.interval_us = intervalUs;
    return check(api_->config(pcc_, &config), "mango_pcc_ctrl_config");
}

PccStatus MangoPccEngine::registerAlgorithm(uint32_t slot, const PccAlgorithm& algorithm,
                                            std::span<const uint8_t> initialParams) {
    std::vector<uint8_t>& block = params_[slot];
    block.assign(initialParams.begin(), initialParams.end());
    PccStatus status =
        check(api_->registerEvent(pcc_, slot, algorithm.event, algorithm.requiredMetrics,
                                  block.data(), block.size()),
              "mango_pcc_ctrl_reg_algo_event");
    if (!status.ok()) {
        params_.erase(slot);
        return status;
    }
    return check(api_->paramsRegister(pcc_, slot, algorithm.params.data(),
                                      static_cast<unsigned>(algorithm.params.size())),
                 "mango_pcc_params_register");
}

PccStatus MangoPccEngine::unregisterAlgorithm(uint32_t slot) {
    PccStatus status = check(api_->unregister(pcc_, slot), "mango_pcc_ctrl_unreg_algo");
    if (status.ok()) params_.erase(slot);
    return status;
}

PccStatus MangoPccEngine::apply(uint32_t slot, std::span<const uint32_t> qps) {
    if (qps.empty()) return PccStatus::success();  // NULL would mean every QP
    std::vector<unsigned> list(qps.begin(), qps.end());
    return check(api_->apply(pcc_, slot, list.data(), static_cast<unsigned>(list.size())),
                 "mango_pcc_ctrl_apply_algo");
}

PccStatus MangoPccEngine::applyToAll(uint32_t slot) {
    return check(api_->apply(pcc_, slot, nullptr, 0), "mango_pcc_ctrl_apply_algo");
}

PccStatus MangoPccEngine::release(std::span<const uint32_t> qps) {
    // Seed 003 documents no call that takes a QP off a slot: the QP keeps its algorithm until
    // it is destroyed, and the caller says so.
    if (qps.empty()) return PccStatus::success();
    return {-EOPNOTSUPP, "libmango has no call that takes a QP off its slot"};
}

PccStatus MangoPccEngine::run(unsigned threads) {
    PccStatus status = check(api_->run(pcc_, threads), "mango_pcc_ctrl_run");
    running_ = status.ok();
    return status;
}

PccStatus MangoPccEngine::stop() {
    PccStatus status = check(api_->stop(pcc_), "mango_pcc_ctrl_stop");
    if (status.ok()) running_ = false;
    return status;
}

PccStatus MangoPccEngine::walkParams(uint32_t slot, const PccParamVisitor& visit, bool write) {
    WalkContext context{&visit};
    return check(api_->walkParams(pcc_, slot, walkTrampoline, &context, write ? 1 : 0),
                 "mango_pcc_walk_params");
}

PccStatus MangoPccEngine::window(uint32_t qpNum, uint32_t& window) {
    return check(api_->window(pcc_, qpNum, &window), "mango_pcc_window_current_by_qp");
}

}  // namespace ibqos::host
