// SPDX-License-Identifier: MIT
// makeSaPathSource: lazily opened UmadTransports and their SaClients, per worker.
#include "host-sched/agent/sa_path_source.hpp"

#include <map>
#include <memory>
#include <set>

#include "host-sched/sa-client/umad_transport.hpp"

namespace ibqos::host {

namespace {

struct PortClient {
    std::unique_ptr<UmadTransport> transport;
    std::unique_ptr<SaClient> client;
};

}  // namespace

PathSource makeSaPathSource(RetryPolicy retry, std::function<void(const std::string&)> log) {
    using Port = std::pair<std::string, uint8_t>;
    auto ports = std::make_shared<std::map<Port, PortClient>>();
    auto logged = std::make_shared<std::set<std::string>>();
    auto logOnce = [logged, log](const std::string& key, const std::string& message) {
        if (logged->insert(key).second) log(message);
    };
    return [ports, retry, logOnce](const std::vector<PathKey>& keys) {
        std::vector<PathReply> replies(keys.size());
        std::map<Port, std::vector<size_t>> byPort;
        for (size_t i = 0; i < keys.size(); ++i)
            byPort[{keys[i].device, keys[i].port}].push_back(i);
        for (const auto& [where, indices] : byPort) {
            const std::string name = where.first + " port " + std::to_string(where.second);
            PortClient& port = (*ports)[where];
            if (!port.transport) {
                std::string error;
                port.transport = UmadTransport::open(where.first, where.second, error);
                if (!port.transport) {
                    logOnce("open " + name, "cannot ask the SA from " + name + ": " + error);
                    ports->erase(where);  // tried again with the next questions
                    continue;
                }
                port.client =
                    std::make_unique<SaClient>(*port.transport, retry, randomTransactionIdSeed());
            }
            std::vector<SaQuery> queries;
            for (size_t i : indices) {
                SaQuery query;
                query.slid = keys[i].slid;
                query.dlid = keys[i].dlid;
                query.pkey = keys[i].pkey;
                queries.push_back(query);
            }
            std::vector<PathResult> results = port.client->queryMany(queries);
            for (size_t j = 0; j < indices.size(); ++j) {
                const PathResult& r = results[j];
                PathReply& reply = replies[indices[j]];
                if (r.status == PathStatus::Found) {
                    reply = {PathAnswer::Found, r.record.sl};
                } else if (r.status == PathStatus::NoPath) {
                    reply = {PathAnswer::NoPath, std::nullopt};
                } else {
                    // A wedged SA would otherwise fill the log.
                    logOnce(r.message, "PathRecord query from " + name + " failed: " + r.message +
                                           " (further failures like it are counted, not logged)");
                }
            }
        }
        return replies;
    };
}

}  // namespace ibqos::host
