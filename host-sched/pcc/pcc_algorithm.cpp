// SPDX-License-Identifier: MIT
// The algorithm registry and access to parameter blocks by name.
#include "host-sched/pcc/pcc_algorithm.hpp"

#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "common/text.hpp"

namespace ibqos::host {

namespace {

const mango_pcc_param_t* findParam(const PccAlgorithm& algorithm, std::string_view name) {
    for (const mango_pcc_param_t& p : algorithm.params) {
        if (name == p.name) return &p;
    }
    return nullptr;
}

size_t sizeOf(mango_pcc_param_type_e type) {
    return type == MANGO_PCC_PARAM_U32 ? sizeof(uint32_t) : sizeof(uint64_t);
}

}  // namespace

std::span<const PccAlgorithm> pccAlgorithms() {
    static const std::array<PccAlgorithm, 2> all{dcqcnAlgorithm(), swiftAlgorithm()};
    return all;
}

const PccAlgorithm* findPccAlgorithm(std::string_view name) {
    for (const PccAlgorithm& a : pccAlgorithms()) {
        if (sameName(a.name, name)) return &a;
    }
    return nullptr;
}

std::vector<uint8_t> defaultParamBlock(const PccAlgorithm& algorithm) {
    std::vector<uint8_t> block(algorithm.paramSize, 0);
    algorithm.initParams(block.data());
    return block;
}

bool parseParamValue(mango_pcc_param_type_e type, std::string_view value, void* out) {
    if (value.empty() || value.size() > 64) return false;
    std::string text(value);
    char* end = nullptr;
    errno = 0;
    if (type == MANGO_PCC_PARAM_DOUBLE) {
        double v = std::strtod(text.c_str(), &end);
        if (errno || *end || !std::isfinite(v)) return false;
        std::memcpy(out, &v, sizeof v);
        return true;
    }
    std::optional<uint64_t> v = parseNumber(text);
    if (!v) return false;
    if (type == MANGO_PCC_PARAM_U32) {
        if (*v > UINT32_MAX) return false;
        uint32_t narrow = static_cast<uint32_t>(*v);
        std::memcpy(out, &narrow, sizeof narrow);
    } else {
        std::memcpy(out, &*v, sizeof *v);
    }
    return true;
}

std::string formatParamValue(mango_pcc_param_type_e type, const void* value) {
    if (type == MANGO_PCC_PARAM_DOUBLE) {
        double v;
        std::memcpy(&v, value, sizeof v);
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.9g", v);
        return buf;
    }
    if (type == MANGO_PCC_PARAM_U32) {
        uint32_t v;
        std::memcpy(&v, value, sizeof v);
        return std::to_string(v);
    }
    uint64_t v;
    std::memcpy(&v, value, sizeof v);
    return std::to_string(v);
}

bool setParam(const PccAlgorithm& algorithm, std::span<uint8_t> block, std::string_view name,
              std::string_view value) {
    const mango_pcc_param_t* p = findParam(algorithm, name);
    if (!p || p->offset + sizeOf(p->type) > block.size()) return false;
    return parseParamValue(p->type, value, block.data() + p->offset);
}

std::string getParam(const PccAlgorithm& algorithm, std::span<const uint8_t> block,
                     std::string_view name) {
    const mango_pcc_param_t* p = findParam(algorithm, name);
    if (!p || p->offset + sizeOf(p->type) > block.size()) return {};
    return formatParamValue(p->type, block.data() + p->offset);
}

}  // namespace ibqos::host
