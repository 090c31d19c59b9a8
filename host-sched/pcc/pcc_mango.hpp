// SPDX-License-Identifier: MIT
// MangoPccEngine: the PCC engine of libmango, loaded at run time when it is installed.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "host-sched/pcc/pcc_engine.hpp"

namespace ibqos::host {

// The library's file name: IBQOS_LIBMANGO if set, else "libmango.so" on the loader path.
std::string libmangoPath();
// Whether the library loads and has the documented calls; error says why not.
bool libmangoAvailable(std::string& error);

// One mango_pcc handle on one RoCE device. Nothing of libmango is linked: every call is
// looked up with dlsym, so hosts without it run the simulated engine instead.
class MangoPccEngine : public PccEngine {
  public:
    // nullptr and error set when the library or the device cannot be opened.
    static std::unique_ptr<MangoPccEngine> open(const std::string& device, std::string& error);
    ~MangoPccEngine() override;

    std::string_view kind() const override { return "mango"; }
    PccStatus configureInterval(uint32_t intervalUs) override;
    PccStatus registerAlgorithm(uint32_t slot, const PccAlgorithm& algorithm,
                                std::span<const uint8_t> initialParams) override;
    PccStatus unregisterAlgorithm(uint32_t slot) override;
    PccStatus apply(uint32_t slot, std::span<const uint32_t> qps) override;
    PccStatus applyToAll(uint32_t slot) override;
    PccStatus release(std::span<const uint32_t> qps) override;
    PccStatus run(unsigned threads) override;
    PccStatus stop() override;
    PccStatus walkParams(uint32_t slot, const PccParamVisitor& visit, bool write) override;
    PccStatus window(uint32_t qpNum, uint32_t& window) override;

    struct Api;

  private:
    MangoPccEngine(std::unique_ptr<Api> api, mango_pcc_h pcc);
    PccStatus check(mango_status_e rc, const char* call) const;

    std::unique_ptr<Api> api_;
    mango_pcc_h pcc_;
    bool running_ = false;
    // libmango may keep pointers to what it is given: kept alive while registered.
    std::map<uint32_t, std::vector<uint8_t>> params_;
};

}  // namespace ibqos::host
