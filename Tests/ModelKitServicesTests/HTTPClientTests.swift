import Foundation
import Synchronization
import Testing

@testable import ModelKitServices

#if canImport(FoundationNetworking)
    import FoundationNetworking

    @Suite("The HTTP client's delegate queue on Linux")
    struct CallbackQueueTests {
        /// What the blocks saw, shared with them.
        final class Log: Sendable {
            let seen = Mutex<[Int]>([])
            let running = Atomic<Int>(0)
            let overlapped = Atomic<Bool>(false)
        }

        @Test("Blocks handed to the delegate queue run one at a time, in the order they were added")
        func blocksRunInOrder() async {
            let queue = CallbackQueue()
            let log = Log()
            // Added from several tasks at once, each task's blocks in its own order.
            await withTaskGroup(of: Void.self) { group in
                for thread in 0..<4 {
                    group.addTask {
                        for index in 0..<500 {
                            queue.addOperation {
                                if log.running.add(1, ordering: .sequentiallyConsistent).newValue > 1 {
                                    log.overlapped.store(true, ordering: .relaxed)
                                }
                                log.seen.withLock { $0.append(thread * 1_000 + index) }
                                log.running.subtract(1, ordering: .sequentiallyConsistent)
                            }
                        }
                    }
                }
            }
            await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in queue.addOperation { done.resume() } }
            let order = log.seen.withLock { $0 }
            let didOverlap = log.overlapped.load(ordering: .relaxed)
            #expect(order.count == 2_000)
            #expect(!didOverlap)
            for thread in 0..<4 {
                #expect(order.filter { $0 / 1_000 == thread } == (0..<500).map { thread * 1_000 + $0 })
            }
        }
    }
#endif
