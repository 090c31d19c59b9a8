// SPDX-License-Identifier: MIT
// ibqos-sa-probe: sends raw PathRecord requests to the SA and prints the whole answers, so that
// two SAs (OpenSM's own handler and the plugin's responder) can be compared byte for byte. A
// test tool: never installed.
//
//   ibqos-sa-probe [--timeout MS] < requests
//
// A request line: `get|gettable MASK RECORD` (MASK the component mask in hex, RECORD the 64
// bytes of the PathRecord in hex). An answer line, in order: `STATUS METHOD MAD` (the MAD
// status and method in hex, then the whole 256-byte MAD in hex with its transaction id zeroed:
// headers, records and padding), or `timeout` when the SA did not answer.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>

#include "host-sched/sa-client/umad_transport.hpp"
#include "ib/mad.hpp"

using namespace ibqos;

namespace {

bool parseHex(const std::string& text, uint8_t* out, size_t size) {
    if (text.size() != 2 * size) return false;
    for (size_t i = 0; i < size; ++i) {
        unsigned v;
        if (std::sscanf(text.c_str() + 2 * i, "%2x", &v) != 1) return false;
        out[i] = static_cast<uint8_t>(v);
    }
    return true;
}

std::string toHex(const uint8_t* bytes, size_t size) {
    static const char digits[] = "0123456789abcdef";
    std::string s;
    for (size_t i = 0; i < size; ++i) {
        s += digits[bytes[i] >> 4];
        s += digits[bytes[i] & 15];
    }
    return s;
}

}  // namespace

int main(int argc, char** argv) {
    std::chrono::milliseconds timeout{2000};
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--timeout") == 0 && i + 1 < argc) {
            timeout = std::chrono::milliseconds(std::atoi(argv[++i]));
        } else {
            std::fprintf(stderr, "usage: ibqos-sa-probe [--timeout MS] < requests\n");
            return 2;
        }
    }
    std::string error;
    auto transport = host::UmadTransport::open("", 0, error);
    if (!transport) {
        std::fprintf(stderr, "ibqos-sa-probe: %s\n", error.c_str());
        return 2;
    }
    uint32_t id = 0x5a000000;
    std::string line;
    while (std::getline(std::cin, line)) {
        std::istringstream fields(line);
        std::string method, mask, record;
        fields >> method >> mask >> record;
        uint8_t mad[ib::MadSize] = {};
        mad[ib::at::BaseVersion] = ib::BaseVersion;
        mad[ib::at::MgmtClass] = ib::SaClass;
        mad[ib::at::ClassVersion] = ib::SaClassVersion;
        mad[ib::at::Method] = method == "get" ? ib::MethodGet : ib::MethodGetTable;
        ib::put64(&mad[ib::at::TransactionId], ++id);
        ib::put16(&mad[ib::at::AttributeId], ib::PathRecordAttribute);
        ib::put64(&mad[ib::at::ComponentMask], std::stoull(mask, nullptr, 16));
        if ((method != "get" && method != "gettable") ||
            !parseHex(record, mad + ib::SaHeaderSize, ib::PathRecordSize)) {
            std::fprintf(stderr, "ibqos-sa-probe: cannot read request '%s'\n", line.c_str());
            return 2;
        }
        std::string sent = transport->send(std::span<const uint8_t>(mad, ib::MadSize), timeout);
        if (!sent.empty()) {
            std::fprintf(stderr, "ibqos-sa-probe: %s\n", sent.c_str());
            return 2;
        }
        std::string answer = "timeout";
        auto deadline = std::chrono::steady_clock::now() + timeout;
        while (std::chrono::steady_clock::now() < deadline) {
            host::Received got =
                transport->receive(std::chrono::duration_cast<std::chrono::milliseconds>(
                    deadline - std::chrono::steady_clock::now()));
            if (got.status == host::ReceiveStatus::Error) {
                std::fprintf(stderr, "ibqos-sa-probe: %s\n", got.message.c_str());
                return 2;
            }
            if (got.status != host::ReceiveStatus::Mad) break;
            std::vector<uint8_t>& m = got.mad;
            // The MAD layer owns the high 32 bits of the transaction id.
            if (m.size() < ib::SaHeaderSize ||
                static_cast<uint32_t>(ib::get64(m, ib::at::TransactionId)) != id) {
                continue;
            }
            // An answer shorter than a MAD (a table's single segment) is printed padded.
            m.resize(std::max(m.size(), ib::MadSize));
            char head[16];
            std::snprintf(head, sizeof head, "%04x %02x ", ib::get16(m, ib::at::Status),
                          m[ib::at::Method]);
            std::memset(&m[ib::at::TransactionId], 0, 8);
            answer = head + toHex(m.data(), m.size());
            break;
        }
        std::cout << answer << '\n' << std::flush;
    }
    return 0;
}
