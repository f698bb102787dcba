import Testing
@testable import CohortCore
