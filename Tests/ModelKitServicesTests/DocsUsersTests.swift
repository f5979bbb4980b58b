import Foundation
import Testing

/// The docs tests of ModelKitTests link only ModelKit, so Docs/Services.md marks its blocks as
/// fragments. The "Users" section's blocks are checked here instead: as one program, in order,
/// type-checked against this build's ModelKitServices with the compiler's data-race diagnostics.
@Suite("The Users docs")
struct DocsUsersTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// The Swift blocks between `## Users` and the next second-level heading, with the page line
    /// of each block's first line.
    static func blocks(of page: String) -> [(line: Int, code: [String])] {
        let lines = page.components(separatedBy: "\n")
        guard let start = lines.firstIndex(of: "## Users") else { return [] }
        var blocks: [(Int, [String])] = []
        var index = start + 1
        while index < lines.count, !lines[index].hasPrefix("## ") {
            if lines[index].trimmingCharacters(in: .whitespaces) == "```swift" {
                let first = index + 1
                var code: [String] = []
                index += 1
                while index < lines.count, lines[index].trimmingCharacters(in: .whitespaces) != "```" {
                    code.append(lines[index])
                    index += 1
                }
                blocks.append((first + 1, code))
            }
            index += 1
        }
        return blocks
    }

    @Test("The Users section of Docs/Services.md compiles against ModelKitServices, Keychain store included")
    func usersSectionCompiles() throws {
        let page = try String(contentsOf: Self.root.appendingPathComponent("Docs/Services.md"), encoding: .utf8)
        let blocks = Self.blocks(of: page)
        #expect(blocks.count >= 5)
        #expect(blocks.contains { $0.code.contains { $0.contains("struct KeychainCredentialStore") } })
        var source = "import Foundation\n"
        for block in blocks {
            source += "#sourceLocation(file: \"Docs/Services.md\", line: \(block.line))\n"
            source += block.code.joined(separator: "\n") + "\n#sourceLocation()\n"
        }
        let (status, output) = try Self.typeCheck(source)
        #expect(status == 0, "\(output)")
        #expect(!output.contains("warning:"), "\(output)")
    }

    /// Runs the compiler up to its SIL diagnostics (where the data-race checks are) on `source`.
    static func typeCheck(_ source: String) throws -> (Int32, String) {
        let binary = URL(
            fileURLWithPath: try String(contentsOfFile: "/proc/self/cmdline", encoding: .utf8)
                .split(separator: "\0").first.map(String.init) ?? CommandLine.arguments[0])
        let build = binary.deletingLastPathComponent()
        let path = ProcessInfo.processInfo.environment["PATH"] ?? ""
        let candidates =
            path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent("swiftc") }
            + [URL(fileURLWithPath: "/opt/swift/usr/bin/swiftc")]
        let swiftc = try #require(candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) })
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("modelkit-docs-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("main.swift")
        try source.write(to: file, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = swiftc
        process.arguments = [
            "-swift-version", "6", "-I", build.appendingPathComponent("Modules").path,
            "-Xcc", "-fmodule-map-file=" + build.appendingPathComponent("ModelKitShims.build/module.modulemap").path,
            "-Xcc", "-I" + root.appendingPathComponent("Sources/ModelKitShims/include").path,
            "-emit-sil", "-o", "/dev/null", file.path,
        ]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, output)
    }
}
