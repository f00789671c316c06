/// The caller alone: each request is a task that parks until `connections` of them are parked,
/// with no client at all. Its memory per in-flight request is the harness's own (the task, its
/// frames), which `scripts/parked-memory.sh` subtracts from every client's figure.
enum CallerOnlyRunner {
    actor Gate {
        let size: Int
        var parked: [CheckedContinuation<Void, Never>] = []

        init(size: Int) { self.size = size }

        func park() async {
            await withCheckedContinuation { continuation in
                parked.append(continuation)
                guard parked.count >= size else { return }
                let ready = parked
                parked.removeAll()
                for waiting in ready { waiting.resume() }
            }
        }
    }

    static func make(connections: Int) -> Runner {
        let gate = Gate(size: connections)
        return Runner(request: { await gate.park() }, shutdown: {})
    }
}
