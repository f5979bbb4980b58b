import Foundation
import ModelKit
import ModelKitServiceTesting
import Testing

@testable import ModelKitServices

/// The conformance checks that any adapter runs (ModelKitServiceTesting), against KintoService on
/// the real server: the same checks the dictionary adapter of ModelKitServiceAdapterTests passes.
@Suite(
    "KintoService passes the adapter conformance checks", .enabled(if: serviceTestsEnabled, serviceTestsSkipped), .hangBackstop)
struct KintoConformanceTests {
    @Test("KintoService passes every conformance check", arguments: ServiceConformance.Check.allCases)
    func conformance(_ check: ServiceConformance.Check) async throws {
        try await ServiceConformance { try await KintoServer.freshService(collections: ServiceConformance.collections) }.run(
            check)
    }

    @Test("KintoService's accounts pass every account conformance check", arguments: UserServiceConformance.Check.allCases)
    func accounts(_ check: UserServiceConformance.Check) async throws {
        let url = try await KintoServer.shared.value.url
        try await UserServiceConformance { KintoService(url: url, timeout: .seconds(120)) }.run(check)
    }
}
