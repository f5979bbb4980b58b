// A helper process for the sync's kill test (issue #34): opens a store of writers and articles,
// makes random changes, saves them and syncs with a Kinto server, over and over, until it is
// killed, or for a number of rounds when given (a second device of the two-process test), after
// which it syncs until a sync gets through, says `done` and exits.
// Usage: SyncKillChild <store path> <server url> <bucket> <user> <password> <seed> [<rounds>]
//
// It reports on standard output, one line per event, each written by one `write`:
//
//     opened                                 the store opened
//     saving <change> [<change>…]            before save(): the changes that save writes
//     saved                                  save() returned: the changes are acknowledged
//     syncing / synced / sync-failed <why>   around sync()
//     done                                   the rounds are over and a last sync got through
//     error <description>                    anything else thrown; it then exits with status 1
//
// A change is `create:<collection>/<id>`, `set:<collection>/<id>:<field>=<value>` or
// `delete:<collection>/<id>`; values are unique strings, so the test can tell which write won.
import Foundation
import ModelKit
import ModelKitServices
import ModelKitTestSupport
import ServiceTestModels

// Its models are the service tests' (Tests/ServiceTestModels), so that the test reads what it wrote.

let arguments = CommandLine.arguments
let rounds = arguments.count == 8 ? Int(arguments[7]) : nil
guard arguments.count == 7 || (arguments.count == 8 && rounds != nil), let url = URL(string: arguments[2]),
    let seed = UInt64(arguments[6])
else {
    FileHandle.standardError.write(Data("usage: SyncKillChild <store> <url> <bucket> <user> <password> <seed>\n".utf8))
    exit(2)
}

func report(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

func run() async throws {
    try ModelRegistry.register(Writer.self, Article.self)
    let store = try ModelStore(url: URL(fileURLWithPath: arguments[1]))
    let service = KintoService(url: url, bucket: arguments[3], user: arguments[4], password: arguments[5], timeout: .seconds(60))
    let sync = ModelSync(store: store, service: service, models: [Writer.self, Article.self])
    let context = store.context
    report("opened")
    var random = SplitMix64(seed: seed)
    var made = 0
    func unique() -> String {
        made += 1
        return "\(seed % 100_000)-\(made)"
    }
    var round = 0
    while rounds.map({ round < $0 }) ?? true {
        round += 1
        var changes: [String] = []
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            let writers = context.models(of: Writer.self).filter { $0.modelState != .needsData }
            let articles = context.models(of: Article.self).filter { $0.modelState != .needsData }
            var operation = Int.random(in: 0..<10, using: &random) / 2
            if writers.isEmpty { operation = 0 }
            if operation == 4 { operation = writers.count > 5 && random.chance(0.5) ? 5 : (articles.count > 3 ? 4 : 6) }
            switch operation {
            case 0 where writers.count < 8:
                let writer = Writer.instance(objectId: "w" + unique(), in: context)
                writer.name = "n" + unique()
                changes.append("create:Writer/\(writer.objectId!)")
                changes.append("set:Writer/\(writer.objectId!):name=\(writer.name)")
            case 1 where articles.count < 12:
                let article = Article.instance(objectId: "a" + unique(), in: context)
                article.title = "t" + unique()
                let writer = random.pick(writers)
                article.author = writer
                writer.articles.append(article)
                changes.append("create:Article/\(article.objectId!)")
                changes.append("set:Article/\(article.objectId!):title=\(article.title)")
            case 2:
                let writer = random.pick(writers)
                writer.name = "n" + unique()
                changes.append("set:Writer/\(writer.objectId!):name=\(writer.name)")
            case 3 where !articles.isEmpty:
                let article = random.pick(articles)
                article.title = "t" + unique()
                changes.append("set:Article/\(article.objectId!):title=\(article.title)")
            case 4:
                let article = random.pick(articles)
                changes.append("delete:Article/\(article.objectId!)")
                article.removeFromContext()
            case 5:
                let writer = random.pick(writers)
                changes.append("delete:Writer/\(writer.objectId!)")
                writer.removeFromContext()
            default:
                break
            }
        }
        if !changes.isEmpty {
            report("saving " + changes.joined(separator: " "))
            try await store.save()
            report("saved")
        }
        if random.chance(0.5) {
            report("syncing")
            do {
                try await sync.sync()
                report("synced")
            } catch let error as ServiceError {
                report("sync-failed \(error.code) \(String(describing: error).prefix(200))")
            }
        }
    }
    // The rounds are over: sync until a sync gets through (faults may still be queued).
    for _ in 0..<50 {
        report("syncing")
        do {
            try await sync.sync()
            report("synced")
            report("done")
            return
        } catch let error as ServiceError {
            report("sync-failed \(error.code) \(String(describing: error).prefix(200))")
        }
    }
    report("error no sync got through in 50 tries")
    exit(1)
}

do {
    try await run()
} catch {
    report("error \(error)")
    exit(1)
}
