import Foundation
import MallocStats

#if os(Linux)
    import Glibc
#endif

// Resident memory of the benchmark process, for the peak-RSS columns of the write and load
// benchmarks, and the C heap's own count of the bytes it hands out, for `graph-memory`.
//
// Only Linux can reset the high-water mark (`/proc/self/clear_refs`), so only Linux reports
// numbers. Elsewhere every function returns `nil`: `getrusage`'s `ru_maxrss` is the peak since the
// process started and cannot be reset, so it would charge each subject with everything that ran
// before it.

enum Memory {
    /// The resident set size now, in bytes (`VmRSS`), or `nil` where it is not measured.
    static func residentBytes() -> Int? {
        statusField("VmRSS:")
    }

    /// The highest resident set size since the last ``resetPeak()``, in bytes (`VmHWM`), or `nil`
    /// where it is not measured.
    static func peakBytes() -> Int? {
        statusField("VmHWM:")
    }

    /// Hands the heap's free pages back to the system and makes the current resident set size the
    /// new peak. Returns the resident set size after that, or `nil` where peaks are not measured
    /// (then ``peakBytes()`` must not be used either).
    ///
    /// Returning free pages first matters: glibc keeps freed memory mapped, so without it the
    /// memory that the previous run freed would count as this run's baseline.
    @discardableResult
    static func resetPeak() -> Int? {
        #if os(Linux)
            releaseFreeMemory()
            let file = open("/proc/self/clear_refs", O_WRONLY)
            guard file >= 0 else { return nil }
            defer { close(file) }
            // "5" resets the peak resident set size to the current one (proc(5)).
            let written = write(file, "5", 1)
            guard written == 1 else { return nil }
            return residentBytes()
        #else
            return nil
        #endif
    }

    /// The bytes the C heap hands out now (every live allocation, with malloc's per-chunk
    /// overhead), or `nil` where the platform does not say. Unlike the resident set size, this
    /// does not depend on what earlier runs freed, nor on pages that malloc keeps.
    static func heapBytes() -> Int? {
        let bytes = mallocstats_allocated_bytes()
        return bytes >= 0 ? Int(bytes) : nil
    }

    /// The resident set size once freed heap memory has been handed back to the system, or `nil`
    /// where it is not measured: what the live data occupies.
    static func settledResidentBytes() -> Int? {
        #if os(Linux)
            releaseFreeMemory()
            return residentBytes()
        #else
            return nil
        #endif
    }

    #if os(Linux)
        /// Calls glibc's `malloc_trim(0)` (through the C target: Swift's Glibc module does not
        /// declare it).
        private static func releaseFreeMemory() {
            mallocstats_trim()
        }

        /// A `kB` field of `/proc/self/status`, in bytes.
        private static func statusField(_ name: String) -> Int? {
            guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
                let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name) })
            else { return nil }
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, let kilobytes = Int(fields[1].trimmingCharacters(in: .whitespaces)) else { return nil }
            return kilobytes * 1024
        }
    #else
        private static func statusField(_ name: String) -> Int? { nil }
    #endif
}

/// The peaks of a subject's timed runs (see ``Subject/init(_:recordingPeaksIn:setup:body:verify:)``).
final class PeakRecorder {
    /// Per run: the resident set size when the run started (after releasing free memory) and the
    /// peak during the run, in bytes.
    private(set) var runs: [(start: Int, peak: Int)] = []

    func record(start: Int, peak: Int) {
        runs.append((start, peak))
    }

    /// The run with the highest peak, if any was measured.
    var highest: (start: Int, peak: Int)? {
        runs.max { $0.peak < $1.peak }
    }
}

extension Subject {
    /// A subject that also records the peak resident set size of each run's body in `recorder`
    /// (on Linux; elsewhere it records nothing). Releasing free memory and resetting the peak
    /// happen after `setup`, before the clock starts.
    init<Input, Output>(
        _ name: String,
        recordingPeaksIn recorder: PeakRecorder,
        setup: @escaping () throws -> Input,
        body: @escaping (Input) throws -> Output,
        verify: @escaping (Output) throws -> Int
    ) {
        self.name = name
        runOnce = { checksum in
            let clock = ContinuousClock()
            let input = try setup()
            let startBytes = Memory.resetPeak()
            let start = clock.now
            let output = try body(input)
            let end = clock.now
            if let startBytes, let peak = Memory.peakBytes() {
                recorder.record(start: startBytes, peak: peak)
            }
            checksum.add(try verify(output))
            blackHole(output)
            blackHole(input)
            return seconds(end - start)
        }
    }
}
