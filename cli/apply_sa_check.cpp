// SPDX-License-Identifier: MIT
// ibqos apply's check of the live SA (apply_sa_check.hpp).
#include "cli/apply_sa_check.hpp"

#include <chrono>
#include <optional>

#include "common/text.hpp"
#include "host-sched/sa-client/sa_wire.hpp"
#include "sa-matcher/classifier.hpp"
#include "sa-matcher/qos_answer.hpp"

namespace ibqos::cli {

namespace {

// Asks the SA for one path (SubnAdmGet, both ends by LID), with a few attempts.
struct SaReply {
    bool answered = false;  // false: no usable answer (the message says why)
    bool path = false;
    uint8_t sl = 0;
    std::string message;
};

SaReply askSa(host::UmadTransport& transport, const Fabric& fabric, const PathQuery& q,
              uint64_t& transactionId) {
    host::SaQuery query;
    static_cast<ib::QosFields&>(query) = static_cast<const ib::QosFields&>(q);
    query.method = host::SaMethod::Get;
    query.slid = fabric.ports[q.source].lid;
    query.dlid = fabric.ports[q.destination].lid;
    SaReply reply;
    for (unsigned attempt = 0; attempt < 3; ++attempt) {
        const uint64_t tid = transactionId++;
        const auto timeout = std::chrono::milliseconds(1000 << attempt);
        if (std::string error = transport.send(host::encodeSaQuery(query, tid), timeout);
            !error.empty()) {
            reply.message = "cannot send to the SA: " + error;
            return reply;
        }
        const uint64_t sent[] = {tid};
        const auto deadline = std::chrono::steady_clock::now() + timeout;
        while (true) {
            auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                deadline - std::chrono::steady_clock::now());
            if (left.count() <= 0) break;
            host::Received in = transport.receive(left);
            if (in.status == host::ReceiveStatus::Timeout) break;
            if (in.status == host::ReceiveStatus::Error) {
                reply.message = "cannot receive from the SA: " + in.message;
                return reply;
            }
            if (in.status != host::ReceiveStatus::Mad) continue;
            host::DecodedAnswer a = host::decodePathAnswer(in.mad, query, sent);
            if (a.kind == host::AnswerKind::NotOurs || a.kind == host::AnswerKind::Busy) continue;
            if (a.kind == host::AnswerKind::Invalid) {
                reply.message = "unusable answer: " + a.error.toString();
                return reply;
            }
            reply.answered = true;
            reply.path = a.kind == host::AnswerKind::Path;
            reply.sl = a.record.sl;
            return reply;
        }
        reply.message = "no answer from the SA";
    }
    return reply;
}

}  // namespace

std::vector<SaSample> saSamples(const Fabric& fabric, const PolicyDiff& diff) {
    constexpr size_t MostRegions = 48, MostOutside = 16;
    std::vector<SaSample> out;
    auto low = [](const FieldValues& v) -> std::optional<uint64_t> {
        if (v.any || v.absent || v.ranges.empty()) return std::nullopt;
        return v.ranges.front().lo;
    };
    for (size_t i = 0; i < diff.regions.size() && i < MostRegions; ++i) {
        const DiffRegion& r = diff.regions[i];
        std::vector<uint32_t> sources = r.sources.list(2), destinations = r.destinations.list(2);
        if (sources.empty() || destinations.empty()) continue;
        SaSample s;
        s.query.source = sources.front();
        s.query.destination = destinations.front();
        if (s.query.source == s.query.destination) {
            if (r.loopback == Loopback::Only) continue;  // loopback paths are not asked
            if (destinations.size() > 1) {
                s.query.destination = destinations[1];
            } else if (sources.size() > 1) {
                s.query.source = sources[1];
            } else {
                continue;
            }
        }
        s.query.serviceId = low(r.serviceIds);
        if (auto q = low(r.qosClasses)) s.query.qosClass = static_cast<uint16_t>(*q);
        if (auto p = low(r.pkeys)) s.query.pkey = static_cast<uint16_t>(*p);
        s.origin = "region " + std::to_string(i + 1);
        out.push_back(s);
    }
    // Outside the regions: the first endpoints to one another, asking for nothing else.
    const std::vector<uint32_t>& ends = fabric.endpoints();
    size_t outside = 0;
    for (size_t a = 0; a < ends.size() && outside < MostOutside; ++a) {
        for (size_t b = 0; b < ends.size() && outside < MostOutside; ++b) {
            if (a == b || !fabric.ports[ends[a]].lid || !fabric.ports[ends[b]].lid) continue;
            SaSample s;
            s.query.source = ends[a];
            s.query.destination = ends[(a + b + 1) % ends.size()];
            if (s.query.source == s.query.destination) continue;
            s.origin = "outside the diff";
            out.push_back(s);
            ++outside;
            break;
        }
    }
    return out;
}

SaVerification verifySa(host::UmadTransport& transport, const Fabric& fabric, const Policy& policy,
                        const BoundPolicy& bound, const std::vector<SaSample>& samples,
                        const std::string& engineSl) {
    const Classifier classifier(bound);
    const PkeyTables pkeys(fabric);
    uint64_t tid = host::randomTransactionIdSeed();
    SaVerification v;
    Json mismatches = Json::array();
    for (const SaSample& s : samples) {
        const PathAnswer expected = answerPath(policy, pkeys, s.query, classifier.match(s.query));
        const SaReply got = askSa(transport, fabric, s.query, tid);
        std::string problem;
        if (!got.answered) {
            problem = got.message;
        } else if (expected.ok() != got.path) {
            problem = expected.ok() ? "the SA answered no path, the policy a path on SL " +
                                          std::to_string(expected.sl)
                                    : "the SA answered a path, the policy none";
        } else if (expected.ok() && expected.sl != got.sl && engineSl.empty()) {
            problem = "the SA answered SL " + std::to_string(got.sl) + ", the policy SL " +
                      std::to_string(expected.sl);
        }
        if (problem.empty()) continue;
        ++v.mismatches;
        const std::string from = fabric.portName(s.query.source),
                          to = fabric.portName(s.query.destination);
        v.text += "SA " + from + " -> " + to +
                  (s.query.serviceId ? " service-id " + hex(*s.query.serviceId) : "") + " (" +
                  s.origin + "): " + problem + "\n";
        mismatches.push_back({{"source", hex(fabric.ports[s.query.source].guid, 16)},
                              {"destination", hex(fabric.ports[s.query.destination].guid, 16)},
                              {"service_id", jsonOptional(s.query.serviceId)},
                              {"qos_class", jsonOptional(s.query.qosClass)},
                              {"pkey", jsonOptional(s.query.pkey)},
                              {"origin", s.origin},
                              {"problem", problem}});
    }
    v.report = {{"asked", samples.size()},
                {"sl_compared", engineSl.empty()},
                {"mismatches", std::move(mismatches)}};
    if (!engineSl.empty()) {
        v.text += "the routing engine " + engineSl +
                  " chooses the SL of SA answers itself: only whether a path is answered was "
                  "compared\n";
    }
    v.text += std::to_string(samples.size()) + " PathRecord requests asked of the SA, " +
              std::to_string(v.mismatches) +
              (v.mismatches == 1 ? " answer differs\n" : " answers differ\n");
    return v;
}

}  // namespace ibqos::cli
