// SPDX-License-Identifier: MIT
// The collector's scrape: plan each node's MADs, then keep the wire busy within the bounds.
#include "monitor/collector.hpp"

#include <algorithm>
#include <cstdio>

#include "common/text.hpp"

namespace ibqos::monitor {

namespace perf = ib::perf;
using perf::Attribute;

std::string describe(const DeviceKind& kind) {
    const char* type = kind.type == NodeType::Switch   ? "switch"
                       : kind.type == NodeType::Router ? "router"
                                                       : "CA";
    return std::string(type) + " vendor " + hex(kind.vendorId) + " device " + hex(kind.deviceId) +
           " revision " + hex(kind.revision);
}

size_t attributeSlot(Attribute attribute) {
    for (size_t i = 0; i < PortAttributes.size(); ++i)
        if (PortAttributes[i] == attribute) return i;
    throw std::logic_error("not an attribute of a port's scrape");
}

std::vector<NodeTarget> targetsOf(const Fabric& fabric) {
    std::vector<NodeTarget> targets;
    for (uint32_t n = 0; n < fabric.nodes.size(); ++n) {
        const FabricNode& node = fabric.nodes[n];
        NodeTarget target;
        target.node = n;
        target.kind = {node.type, node.vendorId, node.deviceId, node.revision};
        for (unsigned number = 1; number <= node.portCount; ++number) {
            uint32_t port = fabric.portOf(n, number);
            if (port == NoPort) continue;
            const FabricPort& p = fabric.ports[port];
            if (p.peer == NoPort || p.lid == 0) continue;
            target.ports.push_back({port, p.number, p.lid});
        }
        if (!target.ports.empty()) targets.push_back(std::move(target));
    }
    return targets;
}

Collector::Family Collector::familyOf(Attribute attribute) {
    switch (attribute) {
        case Attribute::PortVlXmitWaitCounters:
        case Attribute::PortVlOpData:
        case Attribute::PortVlOpPackets:
            return Family::Vl;
        case Attribute::PortXmitDataSl:
        case Attribute::PortRcvDataSl:
            return Family::Sl;
        default:
            return Family::None;
    }
}

namespace {

// The attribute that asks a device kind whether it has a family at all: when it goes
// unanswered, so does the family, at the cost of one timeout.
Attribute familyProbe(Attribute attribute) {
    switch (attribute) {
        case Attribute::PortVlOpData:
        case Attribute::PortVlOpPackets:
            return Attribute::PortVlXmitWaitCounters;
        case Attribute::PortRcvDataSl:
            return Attribute::PortXmitDataSl;
        default:
            return attribute;
    }
}

}  // namespace

bool Collector::clears(Attribute attribute) const {
    switch (options_.reset) {
        case CounterReset::None:
            return false;
        case CounterReset::Lanes:
            return perf::isLaneAttribute(attribute);
        case CounterReset::All:
            return perf::isLaneAttribute(attribute) || attribute == Attribute::PortCounters;
    }
    return false;
}

Collector::Collector(PmaTransport& transport, std::vector<NodeTarget> targets,
                     CollectorOptions options, SupportTable learnt)
    : transport_(transport),
      targets_(std::move(targets)),
      options_(options),
      support_(std::move(learnt)),
      nodes_(targets_.size()) {
    if (options_.inFlight == 0) options_.inFlight = 1;
    for (const NodeTarget& t : targets_) {
        firstSample_.push_back(static_cast<uint32_t>(samples_.size()));
        for (const PortTarget& p : t.ports) {
            sampleIndex_.emplace(p.port, static_cast<uint32_t>(samples_.size()));
            samples_.emplace_back();
        }
    }
    // Probes that were under way when a previous collector stopped are asked again.
    for (auto& [key, value] : support_)
        if (value == Support::Probing) value = Support::Unknown;
}

const PortSamples* Collector::samples(uint32_t fabricPort) const {
    auto it = sampleIndex_.find(fabricPort);
    return it == sampleIndex_.end() ? nullptr : &samples_[it->second];
}

Support Collector::support(const DeviceKind& kind, Attribute attribute) const {
    auto it = support_.find({kind, attribute});
    return it == support_.end() ? Support::Unknown : it->second;
}

size_t Collector::portCost(const NodeTarget& target, const NodeStatus& status) const {
    size_t cost = 0;
    for (Attribute a : PortAttributes) {
        if (a == Attribute::PortCountersExtended) {
            cost +=
                !status.capabilityKnown ||
                (status.capabilityMask & (perf::CapExtendedWidth | perf::CapExtendedWidthNoIetf));
            continue;
        }
        if (support(target.kind, a) == Support::No) continue;
        cost += clears(a) ? 2 : 1;
    }
    return cost;
}

// The plan: each target's jobs, ClassPortInfo first where it is not known, then every port's
// attributes in PortAttributes order (a port's counters read close together). With a budget,
// the ports from the cursor on that fit, the first always; the next scrape goes on from there.
void Collector::plan(ScrapeStats& stats) {
    queues_.assign(targets_.size(), {});
    size_t planned = 0, count = targets_.size();
    if (count == 0) return;
    auto [t, p] = options_.madBudget ? cursor_ : std::pair<size_t, size_t>{0, 0};
    if (t >= count) t = 0, p = 0;
    for (size_t visited = 0; visited < count; ++visited, t = (t + 1) % count, p = 0) {
        NodeStatus& status = nodes_[t];
        const NodeTarget& target = targets_[t];
        size_t end = p;
        for (; end < target.ports.size(); ++end) {
            size_t cost = portCost(target, status) + (end == p && !status.capabilityKnown);
            if (options_.madBudget && planned > 0 && planned + cost > options_.madBudget) break;
            planned += cost;
        }
        if (end > p) {
            // A PMA that did not answer last time is asked afresh, from its ClassPortInfo on.
            if (!status.answering) status.capabilityKnown = false;
            status.answering = true;
            status.problem.clear();
            std::vector<Job>& queue = queues_[t];
            for (size_t q = end; q-- > p;) {
                for (size_t a = PortAttributes.size(); a-- > 0;)
                    queue.push_back({static_cast<uint32_t>(t), static_cast<uint16_t>(q),
                                     PortAttributes[a], IB_MAD_METHOD_GET});
            }
            if (!status.capabilityKnown)
                queue.push_back(
                    {static_cast<uint32_t>(t), 0, Attribute::ClassPortInfo, IB_MAD_METHOD_GET});
            stats.portsPlanned += end - p;
        }
        if (end < target.ports.size()) {
            cursor_ = {t, end};
            stats.budgetReached = true;
            return;
        }
    }
    cursor_ = {t, 0};
}

void Collector::makeReady(uint32_t target) {
    if (busy_[target] || ready_[target] || queues_[target].empty()) return;
    ready_[target] = true;
    heap_.push({queues_[target].size(), target});
}

// The target's next MAD, applying what is known of its kind: an attribute the kind lacks is
// dropped, one whose support is being asked waits with the others of its family, and the first
// of a family not yet known is the kind's probe.
std::optional<Collector::Job> Collector::nextJob(uint32_t t, bool& probe) {
    std::vector<Job>& queue = queues_[t];
    const NodeTarget& target = targets_[t];
    const NodeStatus& status = nodes_[t];
    probe = false;
    while (!queue.empty()) {
        Job job = queue.back();
        queue.pop_back();
        if (!status.answering) continue;
        Attribute a = job.attribute;
        if (a == Attribute::PortCountersExtended) {
            if (status.capabilityMask & (perf::CapExtendedWidth | perf::CapExtendedWidthNoIetf))
                return job;
            continue;
        }
        Family family = familyOf(a);
        if (family == Family::None || job.method != IB_MAD_METHOD_GET) return job;
        Support s = support(target.kind, a);
        if (s == Support::Yes) return job;
        if (s == Support::No) continue;
        Support first = support(target.kind, familyProbe(a));
        if (s == Support::Probing || first == Support::Probing) {
            deferred_[{target.kind, family}].push_back(job);
            continue;
        }
        support_[{target.kind, a}] = Support::Probing;
        probe = true;
        return job;
    }
    return std::nullopt;
}

void Collector::send(const Job& job, unsigned attempt, bool probe, ScrapeStats& stats) {
    const NodeTarget& target = targets_[job.target];
    const PortTarget& port = target.ports[job.port];
    PmaRequest request;
    request.tid = nextTid_++;
    if (nextTid_ == 0) nextTid_ = 1;
    request.lid = port.lid;
    request.attribute = job.attribute;
    request.method = job.method;
    request.data = job.method == IB_MAD_METHOD_SET ? clearData(job.attribute, port.number)
                                                   : requestData(job.attribute, port.number);
    Pending pending{job, attempt, probe, transport_.now() + options_.timeout};
    ++stats.sent;
    ++stats.sentByAttribute[job.attribute];
    stats.probes += probe;
    std::string error;
    if (!transport_.send(request, error)) {
        // The local port refused it: as good as lost, without waiting.
        pending.attempt = options_.retries;
        lost(pending, stats);
        nodes_[job.target].problem = "cannot send: " + error;
        return;
    }
    busy_[job.target] = true;
    pending_.emplace(request.tid, pending);
    deadlines_.emplace_back(pending.deadline, request.tid);
    stats.maxInFlight = std::max(stats.maxInFlight, pending_.size());
}

void Collector::resolve(const DeviceKind& kind, Attribute attribute, Support result) {
    support_[{kind, attribute}] = result;
    Family family = familyOf(attribute);
    if (result == Support::No && familyProbe(attribute) == attribute) {
        for (Attribute a : PortAttributes)
            if (familyOf(a) == family) support_[{kind, a}] = Support::No;
    }
    // Every job that waited for the family goes back to its node, to be judged again.
    auto it = deferred_.find({kind, family});
    if (it == deferred_.end()) return;
    std::vector<Job> waiting = std::move(it->second);
    deferred_.erase(it);
    for (const Job& job : waiting) {
        queues_[job.target].push_back(job);
        makeReady(job.target);
    }
}

void Collector::finish(uint32_t target) {
    busy_[target] = false;
    makeReady(target);
}

void Collector::answered(const Pending& pending, const PmaAnswer& answer, ScrapeStats& stats) {
    const Job& job = pending.job;
    const NodeTarget& target = targets_[job.target];
    NodeStatus& status = nodes_[job.target];
    ++stats.answered;
    Attribute a = job.attribute;
    if (answer.status != 0) {
        char text[96];
        std::snprintf(text, sizeof text, "%s of port %u answered status 0x%04x",
                      perf::attributeName(a), target.ports[job.port].number, answer.status);
        if (pending.probe) {
            resolve(target.kind, a, Support::No);
        } else {
            ++stats.errors;
            status.problem = text;
        }
        finish(job.target);
        return;
    }
    if (pending.probe) resolve(target.kind, a, Support::Yes);
    Clock::time_point now = transport_.now();
    if (a == Attribute::ClassPortInfo) {
        status.capabilityKnown = true;
        status.capabilityMask = decodeCapabilityMask(answer.data);
        status.capabilityMask2 = decodeCapabilityMask2(answer.data);
        status.problem.clear();
    } else {
        AttributeHistory& history =
            samples_[firstSample_[job.target] + job.port].attributes[attributeSlot(a)];
        if (job.method == IB_MAD_METHOD_SET) {
            history.clearedAt = now;
        } else {
            if (history.clearedAt) {
                history.previous = Sample{};
                history.previous.at = *history.clearedAt;
                history.previous.valid = true;
                history.clearedAt.reset();
            } else {
                history.previous = history.current;
            }
            history.current = decodeSample(a, answer.data, now);
            history.scrape = stats.scrape;
            if (a == Attribute::PortCounters) ++stats.portsRead;
            if (clears(a))
                queues_[job.target].push_back({job.target, job.port, a, IB_MAD_METHOD_SET});
        }
    }
    finish(job.target);
}

void Collector::lost(const Pending& pending, ScrapeStats& stats) {
    const Job& job = pending.job;
    if (pending.attempt < options_.retries) {
        send(job, pending.attempt + 1, pending.probe, stats);
        return;
    }
    const NodeTarget& target = targets_[job.target];
    if (pending.probe) {
        // A PMA that answered this scrape and drops one attribute does not have it.
        resolve(target.kind, job.attribute, Support::No);
    } else {
        // A PMA that stops answering is skipped for the rest of the scrape: every MAD it still
        // had would cost a timeout of its own.
        NodeStatus& status = nodes_[job.target];
        ++stats.nodesUnanswered;
        status.answering = false;
        status.problem = std::string("no answer to ") + perf::attributeName(job.attribute) +
                         (job.attribute == Attribute::ClassPortInfo
                              ? std::string()
                              : " of port " + std::to_string(target.ports[job.port].number));
        queues_[job.target].clear();
    }
    finish(job.target);
}

ScrapeStats Collector::scrape() {
    ScrapeStats stats;
    stats.scrape = ++scrapes_;
    const Clock::time_point start = transport_.now();
    busy_.assign(targets_.size(), false);
    ready_.assign(targets_.size(), false);
    heap_ = {};
    deferred_.clear();
    pending_.clear();
    deadlines_.clear();
    plan(stats);
    for (uint32_t t = 0; t < targets_.size(); ++t) makeReady(t);

    std::vector<PmaAnswer> answers;
    bool budgetLeft = true;
    for (;;) {
        while (budgetLeft && pending_.size() < options_.inFlight && !heap_.empty()) {
            uint32_t t = heap_.top().second;
            heap_.pop();
            ready_[t] = false;
            if (busy_[t]) continue;
            bool probe = false;
            std::optional<Job> job = nextJob(t, probe);
            if (!job) continue;
            send(*job, 0, probe, stats);
            if (!busy_[t]) makeReady(t);  // it could not go out
            if (options_.madBudget && stats.sent >= options_.madBudget) {
                budgetLeft = false;
                stats.budgetReached = stats.budgetReached || !heap_.empty() ||
                                      std::any_of(queues_.begin(), queues_.end(),
                                                  [](const auto& q) { return !q.empty(); });
            }
        }
        if (pending_.empty()) break;
        while (!deadlines_.empty() && !pending_.count(deadlines_.front().second))
            deadlines_.pop_front();
        Clock::time_point until = deadlines_.front().first;
        answers.clear();
        transport_.wait(until, answers);
        for (const PmaAnswer& answer : answers) {
            auto it = pending_.find(answer.tid);
            if (it == pending_.end()) continue;  // an answer after its timeout
            Pending p = it->second;
            pending_.erase(it);
            if (answer.timedOut) {
                ++stats.timedOut;
                lost(p, stats);
            } else {
                answered(p, answer, stats);
            }
        }
        Clock::time_point now = transport_.now();
        while (!deadlines_.empty() && deadlines_.front().first <= now) {
            auto it = pending_.find(deadlines_.front().second);
            deadlines_.pop_front();
            if (it == pending_.end()) continue;
            Pending p = it->second;
            pending_.erase(it);
            ++stats.timedOut;
            lost(p, stats);
        }
    }
    // Jobs still waiting for a probe that never went out (the budget ran out) stay unasked.
    for (auto& [key, value] : support_)
        if (value == Support::Probing) value = Support::Unknown;
    stats.seconds = std::chrono::duration<double>(transport_.now() - start).count();
    return stats;
}

}  // namespace ibqos::monitor
