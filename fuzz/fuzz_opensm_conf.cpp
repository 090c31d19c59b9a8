// SPDX-License-Identifier: MIT
// libFuzzer target: any bytes as an opensm.conf, its QoS options parsed as OpenSM parses them into
// table templates.
#include <cstddef>
#include <cstdint>
#include <string>

#include "compiler/tables.hpp"
#include "fabric/opensm_conf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    ibqos::SourceFile file("fuzz.conf", std::string(reinterpret_cast<const char*>(data), size));
    ibqos::Diagnostics diagnostics;
    ibqos::OpenSmConf conf = ibqos::readOpenSmConf(file, diagnostics);
    for (const ibqos::QosOptionSet* set :
         {&conf.all, &conf.ca, &conf.router, &conf.switchPort0, &conf.switchExternal}) {
        if (set->vlarbHigh) (void)ibqos::parseVlArbOption(*set->vlarbHigh);
        if (set->vlarbLow) (void)ibqos::parseVlArbOption(*set->vlarbLow);
        if (set->sl2vl) (void)ibqos::parseSl2VlOption(*set->sl2vl);
    }
    return 0;
}
