/* eslint-disable */
import * as types from './graphql';
import type { TypedDocumentNode as DocumentNode } from '@graphql-typed-document-node/core';

/**
 * Map of all GraphQL operations in the project.
 *
 * This map has several performance disadvantages:
 * 1. It is not tree-shakeable, so it will include all operations in the project.
 * 2. It is not minifiable, so the string of a GraphQL query will be multiple times inside the bundle.
 * 3. It does not support dead code elimination, so it will add unused operations.
 *
 * Therefore it is highly recommended to use the babel or swc plugin for production.
 * Learn more about it here: https://the-guild.dev/graphql/codegen/plugins/presets/preset-client#reducing-bundle-size
 */
type Documents = {
    "\n  query Viewer {\n    viewer {\n      user {\n        id\n        email\n      }\n      role\n      scopes\n      environment\n      organization {\n        id\n        name\n      }\n      project {\n        id\n        name\n      }\n    }\n    projects {\n      id\n      name\n    }\n  }\n": typeof types.ViewerDocument,
    "\n  mutation SignOut {\n    signOut {\n      id\n    }\n  }\n": typeof types.SignOutDocument,
    "\n  subscription JobEvents($types: [String!]) {\n    events(types: $types) {\n      id\n      type\n      createdAt\n      data\n    }\n  }\n": typeof types.JobEventsDocument,
    "\n  mutation CreateUpload($input: CreateUploadInput!, $key: String) {\n    createUpload(input: $input, idempotencyKey: $key) {\n      upload {\n        ...UploadFields\n      }\n    }\n  }\n": typeof types.CreateUploadDocument,
    "\n  fragment UploadFields on Upload {\n    id\n    fileId\n    state\n    uploadUrl\n    uploadHeaders\n    partSize\n    parts {\n      partNumber\n      url\n      byteOffset\n      byteSize\n    }\n  }\n": typeof types.UploadFieldsFragmentDoc,
    "\n  query GetUpload($id: ID!) {\n    upload(id: $id) {\n      ...UploadFields\n    }\n  }\n": typeof types.GetUploadDocument,
    "\n  mutation RemintParts($id: ID!, $key: String) {\n    remintParts(uploadId: $id, idempotencyKey: $key) {\n      ...UploadFields\n    }\n  }\n": typeof types.RemintPartsDocument,
    "\n  mutation CompleteParts($id: ID!, $parts: [PartInput!]!, $key: String) {\n    completeParts(uploadId: $id, parts: $parts, idempotencyKey: $key) {\n      id\n      status\n      filename\n    }\n  }\n": typeof types.CompletePartsDocument,
    "\n  mutation CompleteFile($id: ID!, $key: String) {\n    completeFile(id: $id, idempotencyKey: $key) {\n      id\n      status\n      filename\n    }\n  }\n": typeof types.CompleteFileDocument,
    "\n  mutation AbortUpload($id: ID!, $key: String) {\n    abortUpload(uploadId: $id, idempotencyKey: $key) {\n      id\n    }\n  }\n": typeof types.AbortUploadDocument,
    "\n  query UploadedFile($id: ID!) {\n    file(id: $id) {\n      id\n      status\n      filename\n    }\n  }\n": typeof types.UploadedFileDocument,
    "\n  query Sessions {\n    sessions {\n      id\n      createdAt\n      lastSeenAt\n      expiresAt\n      ip\n      userAgent\n      current\n    }\n  }\n": typeof types.SessionsDocument,
    "\n  mutation RevokeSession($id: ID!) {\n    revokeSession(id: $id) {\n      id\n    }\n  }\n": typeof types.RevokeSessionDocument,
    "\n  mutation SignOutEverywhere {\n    signOutEverywhere\n  }\n": typeof types.SignOutEverywhereDocument,
    "\n  mutation ChangePassword($current: String!, $next: String!) {\n    changePassword(currentPassword: $current, newPassword: $next)\n  }\n": typeof types.ChangePasswordDocument,
    "\n  query AiReadyJob($id: ID!) {\n    job(id: $id) {\n      id\n      state\n      preset\n      operation\n      fileId\n      file {\n        id\n        filename\n        pages\n        artifacts {\n          id\n          jobId\n          name\n          mimeType\n        }\n      }\n      artifacts {\n        id\n        name\n        mimeType\n      }\n    }\n  }\n": typeof types.AiReadyJobDocument,
    "\n  query RenderJobOptions($id: ID!) {\n    job(id: $id) {\n      id\n      options\n    }\n  }\n": typeof types.RenderJobOptionsDocument,
    "\n  mutation RenderPages($input: CreateJobInput!, $key: String) {\n    createJob(input: $input, idempotencyKey: $key) {\n      id\n      state\n    }\n  }\n": typeof types.RenderPagesDocument,
    "\n  subscription RenderLive($id: ID!) {\n    jobUpdated(id: $id) {\n      id\n      state\n      progress\n    }\n  }\n": typeof types.RenderLiveDocument,
    "\n  fragment BatchFields on Batch {\n    id\n    createdAt\n    operation\n    preset\n    options\n    state\n    counts {\n      queued\n      running\n      succeeded\n      failed\n      cancelled\n    }\n    creditsEstimated\n    creditsCharged\n    items {\n      fileId\n      jobId\n      state\n      error {\n        code\n        message\n      }\n    }\n  }\n": typeof types.BatchFieldsFragmentDoc,
    "\n  query BatchDetail($id: ID!) {\n    batch(id: $id) {\n      ...BatchFields\n    }\n  }\n": typeof types.BatchDetailDocument,
    "\n  subscription BatchLive($id: ID!) {\n    batchUpdated(id: $id) {\n      ...BatchFields\n    }\n  }\n": typeof types.BatchLiveDocument,
    "\n  query FileDetail($id: ID!) {\n    file(id: $id) {\n      id\n      createdAt\n      projectId\n      filename\n      status\n      byteSize\n      declaredMimeType\n      detectedFormat {\n        extension\n        mimeType\n      }\n      pages\n      sha256\n      duplicateOf\n      expiresAt\n      findings {\n        code\n        message\n      }\n      artifacts {\n        id\n        createdAt\n        jobId\n        step\n        name\n        mimeType\n        byteSize\n      }\n      history {\n        id\n        createdAt\n        type\n        jobId\n        summary\n      }\n    }\n  }\n": typeof types.FileDetailDocument,
    "\n  mutation DeleteFile($id: ID!) {\n    deleteFile(id: $id) {\n      id\n    }\n  }\n": typeof types.DeleteFileDocument,
    "\n  query Files($projectId: ID, $first: Int, $after: String) {\n    viewer {\n      project {\n        id\n        name\n      }\n    }\n    files(projectId: $projectId, first: $first, after: $after) {\n      nodes {\n        id\n        createdAt\n        filename\n        status\n        byteSize\n        detectedFormat {\n          extension\n          mimeType\n        }\n        pages\n        artifacts {\n          id\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": typeof types.FilesDocument,
    "\n  fragment JobFields on Job {\n    id\n    createdAt\n    projectId\n    fileId\n    file {\n      id\n      filename\n    }\n    batchId\n    operation\n    preset\n    options\n    state\n    progress\n    attempts\n    creditsReserved\n    creditsCharged\n    error {\n      code\n      message\n    }\n    artifacts {\n      id\n      name\n      step\n      mimeType\n      byteSize\n      createdAt\n    }\n    startedAt\n    finishedAt\n  }\n": typeof types.JobFieldsFragmentDoc,
    "\n  query JobDetail($id: ID!) {\n    job(id: $id) {\n      ...JobFields\n    }\n  }\n": typeof types.JobDetailDocument,
    "\n  subscription JobLive($id: ID!) {\n    jobUpdated(id: $id) {\n      ...JobFields\n    }\n  }\n": typeof types.JobLiveDocument,
    "\n  mutation CancelJob($id: ID!, $key: String) {\n    cancelJob(id: $id, idempotencyKey: $key) {\n      ...JobFields\n    }\n  }\n": typeof types.CancelJobDocument,
    "\n  query ApiKeys($first: Int, $after: String) {\n    apiKeys(first: $first, after: $after) {\n      nodes {\n        id\n        name\n        masked\n        environment\n        projectId\n        scopes\n        ipAllowList\n        allowedOperations\n        allowedProjects\n        spendLimit\n        rateLimit\n        expiresAt\n        revokedAt\n        lastUsedAt\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n    projects {\n      id\n      name\n    }\n  }\n": typeof types.ApiKeysDocument,
    "\n  mutation CreateApiKey($input: CreateApiKeyInput!) {\n    createApiKey(input: $input) {\n      secret\n      apiKey {\n        id\n        masked\n      }\n    }\n  }\n": typeof types.CreateApiKeyDocument,
    "\n  mutation RevokeApiKey($id: ID!) {\n    revokeApiKey(id: $id) {\n      id\n      revokedAt\n    }\n  }\n": typeof types.RevokeApiKeyDocument,
    "\n  query Members {\n    members {\n      id\n      userId\n      email\n      role\n      createdAt\n    }\n    invitations {\n      id\n      email\n      role\n      createdAt\n      expiresAt\n    }\n  }\n": typeof types.MembersDocument,
    "\n  mutation CreateInvitation($email: String!, $role: Role!) {\n    createInvitation(email: $email, role: $role) {\n      path\n      invitation {\n        id\n      }\n    }\n  }\n": typeof types.CreateInvitationDocument,
    "\n  mutation RevokeInvitation($id: ID!) {\n    revokeInvitation(id: $id) {\n      id\n    }\n  }\n": typeof types.RevokeInvitationDocument,
    "\n  mutation UpdateMember($id: ID!, $role: Role!) {\n    updateMember(id: $id, role: $role) {\n      id\n      role\n    }\n  }\n": typeof types.UpdateMemberDocument,
    "\n  mutation RemoveMember($id: ID!) {\n    removeMember(id: $id) {\n      id\n    }\n  }\n": typeof types.RemoveMemberDocument,
    "\n  query Overview {\n    usage {\n      ...UsageFields\n    }\n    queued: jobs(state: queued, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    running: jobs(state: running, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    succeeded: jobs(state: succeeded, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    failed: jobs(state: failed, first: 100) {\n      nodes {\n        id\n        createdAt\n        operation\n        preset\n        finishedAt\n        error {\n          code\n          message\n        }\n        file {\n          id\n          filename\n        }\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    cancelled: jobs(state: cancelled, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    operations {\n      name\n      kind\n      engine\n      available\n    }\n  }\n": typeof types.OverviewDocument,
    "\n  query Projects {\n    projects {\n      id\n      name\n      concurrencyLimit\n      createdAt\n    }\n  }\n": typeof types.ProjectsDocument,
    "\n  mutation CreateProject($input: CreateProjectInput!) {\n    createProject(input: $input) {\n      id\n      name\n      concurrencyLimit\n    }\n  }\n": typeof types.CreateProjectDocument,
    "\n  mutation UpdateProject($id: ID!, $input: UpdateProjectInput!) {\n    updateProject(id: $id, input: $input) {\n      id\n      name\n      concurrencyLimit\n    }\n  }\n": typeof types.UpdateProjectDocument,
    "\n  query RunSetup {\n    operations {\n      name\n      kind\n      description\n      available\n      engine\n      price {\n        credits\n        per\n      }\n      priceRule\n      inputFormats\n      optionsSchema\n      steps {\n        name\n        operation\n      }\n    }\n    files(first: 50) {\n      nodes {\n        id\n        filename\n        status\n        byteSize\n        pages\n        createdAt\n        detectedFormat {\n          extension\n          mimeType\n        }\n      }\n    }\n  }\n": typeof types.RunSetupDocument,
    "\n  mutation CreateJob($input: CreateJobInput!, $key: String) {\n    createJob(input: $input, idempotencyKey: $key) {\n      id\n      state\n    }\n  }\n": typeof types.CreateJobDocument,
    "\n  mutation CreateBatch($input: CreateBatchInput!, $key: String) {\n    createBatch(input: $input, idempotencyKey: $key) {\n      id\n      state\n    }\n  }\n": typeof types.CreateBatchDocument,
    "\n  query EstimateJob($input: EstimateJobInput!) {\n    estimateJob(input: $input) {\n      credits\n      estimated\n      files {\n        fileId\n        pricing {\n          rule\n          pages\n          lines {\n            step\n            operation\n            units\n            credits\n          }\n        }\n      }\n    }\n  }\n": typeof types.EstimateJobDocument,
    "\n  mutation SignIn($email: String!, $password: String!) {\n    signIn(email: $email, password: $password) {\n      role\n      csrfToken\n    }\n  }\n": typeof types.SignInDocument,
    "\n  mutation SetPassword($token: String!, $password: String!) {\n    setPassword(token: $token, password: $password) {\n      role\n    }\n  }\n": typeof types.SetPasswordDocument,
    "\n  query InvitationPreview($token: String!) {\n    invitation(token: $token) {\n      email\n      role\n      expiresAt\n      hasAccount\n      organization {\n        id\n        name\n      }\n    }\n  }\n": typeof types.InvitationPreviewDocument,
    "\n  mutation AcceptInvitation($token: String!, $password: String!) {\n    acceptInvitation(token: $token, password: $password) {\n      role\n    }\n  }\n": typeof types.AcceptInvitationDocument,
    "\n  fragment UsageFields on Usage {\n    projectId\n    period {\n      start\n      end\n    }\n    credits {\n      balance\n      reserved\n      used\n    }\n    storage {\n      bytes\n      files\n    }\n    egress {\n      bytes\n    }\n  }\n": typeof types.UsageFieldsFragmentDoc,
    "\n  query Usage($from: String!, $to: String!) {\n    usage {\n      ...UsageFields\n    }\n    usageSeries(from: $from, to: $to) {\n      from\n      to\n      days {\n        date\n        credits\n        jobs\n        uploadedBytes\n        egressBytes\n      }\n      operations {\n        operation\n        jobs\n        credits\n      }\n    }\n  }\n": typeof types.UsageDocument,
    "\n  query WebhookEndpoint($id: ID!, $first: Int, $after: String) {\n    webhookEndpoint(id: $id) {\n      id\n      createdAt\n      url\n      enabledEvents\n      status\n      disabledReason\n      disabledAt\n      failingSince\n      previousSecretExpiresAt\n      deliveries(first: $first, after: $after) {\n        nodes {\n          id\n          createdAt\n          eventId\n          eventType\n          status\n          attemptCount\n          nextAttemptAt\n          lastStatusCode\n          lastError\n          attempts {\n            attempt\n            createdAt\n            statusCode\n            durationMs\n            responseSnippet\n            error\n            nextAttemptAt\n          }\n        }\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n      }\n    }\n  }\n": typeof types.WebhookEndpointDocument,
    "\n  mutation SendTestEvent($id: ID!) {\n    sendTestEvent(webhookEndpointId: $id) {\n      id\n      eventId\n      eventType\n    }\n  }\n": typeof types.SendTestEventDocument,
    "\n  mutation EnableWebhookEndpoint($id: ID!) {\n    enableWebhookEndpoint(id: $id) {\n      id\n      status\n      disabledReason\n    }\n  }\n": typeof types.EnableWebhookEndpointDocument,
    "\n  mutation DisableWebhookEndpoint($id: ID!) {\n    disableWebhookEndpoint(id: $id) {\n      id\n      status\n      disabledReason\n    }\n  }\n": typeof types.DisableWebhookEndpointDocument,
    "\n  mutation RotateWebhookSecret($id: ID!, $key: String) {\n    rotateWebhookSecret(id: $id, idempotencyKey: $key) {\n      secret\n      webhookEndpoint {\n        id\n        previousSecretExpiresAt\n      }\n    }\n  }\n": typeof types.RotateWebhookSecretDocument,
    "\n  mutation RetryDelivery($endpoint: ID!, $delivery: ID!, $key: String) {\n    retryDelivery(webhookEndpointId: $endpoint, deliveryId: $delivery, idempotencyKey: $key) {\n      id\n      status\n      attemptCount\n    }\n  }\n": typeof types.RetryDeliveryDocument,
    "\n  mutation DeleteWebhookEndpoint($id: ID!) {\n    deleteWebhookEndpoint(id: $id) {\n      id\n    }\n  }\n": typeof types.DeleteWebhookEndpointDocument,
    "\n  query WebhookEndpoints($first: Int, $after: String) {\n    webhookEndpoints(first: $first, after: $after) {\n      nodes {\n        id\n        createdAt\n        url\n        enabledEvents\n        status\n        disabledReason\n        failingSince\n        deliveries(first: 1) {\n          nodes {\n            id\n            status\n            createdAt\n            lastStatusCode\n          }\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": typeof types.WebhookEndpointsDocument,
    "\n  mutation CreateWebhookEndpoint($input: CreateWebhookEndpointInput!, $key: String) {\n    createWebhookEndpoint(input: $input, idempotencyKey: $key) {\n      webhookEndpoint {\n        id\n        url\n      }\n      secret\n    }\n  }\n": typeof types.CreateWebhookEndpointDocument,
    "\n  query Jobs($projectId: ID, $state: JobState, $first: Int, $after: String) {\n    jobs(projectId: $projectId, state: $state, first: $first, after: $after) {\n      nodes {\n        id\n        createdAt\n        fileId\n        file {\n          id\n          filename\n        }\n        batchId\n        operation\n        preset\n        state\n        progress\n        creditsReserved\n        creditsCharged\n        startedAt\n        finishedAt\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": typeof types.JobsDocument,
    "\n  mutation MintDownloadUrl($fileId: ID!, $artifactId: ID) {\n    createDownloadUrl(fileId: $fileId, artifactId: $artifactId) {\n      url\n      expiresAt\n    }\n  }\n": typeof types.MintDownloadUrlDocument,
};
const documents: Documents = {
    "\n  query Viewer {\n    viewer {\n      user {\n        id\n        email\n      }\n      role\n      scopes\n      environment\n      organization {\n        id\n        name\n      }\n      project {\n        id\n        name\n      }\n    }\n    projects {\n      id\n      name\n    }\n  }\n": types.ViewerDocument,
    "\n  mutation SignOut {\n    signOut {\n      id\n    }\n  }\n": types.SignOutDocument,
    "\n  subscription JobEvents($types: [String!]) {\n    events(types: $types) {\n      id\n      type\n      createdAt\n      data\n    }\n  }\n": types.JobEventsDocument,
    "\n  mutation CreateUpload($input: CreateUploadInput!, $key: String) {\n    createUpload(input: $input, idempotencyKey: $key) {\n      upload {\n        ...UploadFields\n      }\n    }\n  }\n": types.CreateUploadDocument,
    "\n  fragment UploadFields on Upload {\n    id\n    fileId\n    state\n    uploadUrl\n    uploadHeaders\n    partSize\n    parts {\n      partNumber\n      url\n      byteOffset\n      byteSize\n    }\n  }\n": types.UploadFieldsFragmentDoc,
    "\n  query GetUpload($id: ID!) {\n    upload(id: $id) {\n      ...UploadFields\n    }\n  }\n": types.GetUploadDocument,
    "\n  mutation RemintParts($id: ID!, $key: String) {\n    remintParts(uploadId: $id, idempotencyKey: $key) {\n      ...UploadFields\n    }\n  }\n": types.RemintPartsDocument,
    "\n  mutation CompleteParts($id: ID!, $parts: [PartInput!]!, $key: String) {\n    completeParts(uploadId: $id, parts: $parts, idempotencyKey: $key) {\n      id\n      status\n      filename\n    }\n  }\n": types.CompletePartsDocument,
    "\n  mutation CompleteFile($id: ID!, $key: String) {\n    completeFile(id: $id, idempotencyKey: $key) {\n      id\n      status\n      filename\n    }\n  }\n": types.CompleteFileDocument,
    "\n  mutation AbortUpload($id: ID!, $key: String) {\n    abortUpload(uploadId: $id, idempotencyKey: $key) {\n      id\n    }\n  }\n": types.AbortUploadDocument,
    "\n  query UploadedFile($id: ID!) {\n    file(id: $id) {\n      id\n      status\n      filename\n    }\n  }\n": types.UploadedFileDocument,
    "\n  query Sessions {\n    sessions {\n      id\n      createdAt\n      lastSeenAt\n      expiresAt\n      ip\n      userAgent\n      current\n    }\n  }\n": types.SessionsDocument,
    "\n  mutation RevokeSession($id: ID!) {\n    revokeSession(id: $id) {\n      id\n    }\n  }\n": types.RevokeSessionDocument,
    "\n  mutation SignOutEverywhere {\n    signOutEverywhere\n  }\n": types.SignOutEverywhereDocument,
    "\n  mutation ChangePassword($current: String!, $next: String!) {\n    changePassword(currentPassword: $current, newPassword: $next)\n  }\n": types.ChangePasswordDocument,
    "\n  query AiReadyJob($id: ID!) {\n    job(id: $id) {\n      id\n      state\n      preset\n      operation\n      fileId\n      file {\n        id\n        filename\n        pages\n        artifacts {\n          id\n          jobId\n          name\n          mimeType\n        }\n      }\n      artifacts {\n        id\n        name\n        mimeType\n      }\n    }\n  }\n": types.AiReadyJobDocument,
    "\n  query RenderJobOptions($id: ID!) {\n    job(id: $id) {\n      id\n      options\n    }\n  }\n": types.RenderJobOptionsDocument,
    "\n  mutation RenderPages($input: CreateJobInput!, $key: String) {\n    createJob(input: $input, idempotencyKey: $key) {\n      id\n      state\n    }\n  }\n": types.RenderPagesDocument,
    "\n  subscription RenderLive($id: ID!) {\n    jobUpdated(id: $id) {\n      id\n      state\n      progress\n    }\n  }\n": types.RenderLiveDocument,
    "\n  fragment BatchFields on Batch {\n    id\n    createdAt\n    operation\n    preset\n    options\n    state\n    counts {\n      queued\n      running\n      succeeded\n      failed\n      cancelled\n    }\n    creditsEstimated\n    creditsCharged\n    items {\n      fileId\n      jobId\n      state\n      error {\n        code\n        message\n      }\n    }\n  }\n": types.BatchFieldsFragmentDoc,
    "\n  query BatchDetail($id: ID!) {\n    batch(id: $id) {\n      ...BatchFields\n    }\n  }\n": types.BatchDetailDocument,
    "\n  subscription BatchLive($id: ID!) {\n    batchUpdated(id: $id) {\n      ...BatchFields\n    }\n  }\n": types.BatchLiveDocument,
    "\n  query FileDetail($id: ID!) {\n    file(id: $id) {\n      id\n      createdAt\n      projectId\n      filename\n      status\n      byteSize\n      declaredMimeType\n      detectedFormat {\n        extension\n        mimeType\n      }\n      pages\n      sha256\n      duplicateOf\n      expiresAt\n      findings {\n        code\n        message\n      }\n      artifacts {\n        id\n        createdAt\n        jobId\n        step\n        name\n        mimeType\n        byteSize\n      }\n      history {\n        id\n        createdAt\n        type\n        jobId\n        summary\n      }\n    }\n  }\n": types.FileDetailDocument,
    "\n  mutation DeleteFile($id: ID!) {\n    deleteFile(id: $id) {\n      id\n    }\n  }\n": types.DeleteFileDocument,
    "\n  query Files($projectId: ID, $first: Int, $after: String) {\n    viewer {\n      project {\n        id\n        name\n      }\n    }\n    files(projectId: $projectId, first: $first, after: $after) {\n      nodes {\n        id\n        createdAt\n        filename\n        status\n        byteSize\n        detectedFormat {\n          extension\n          mimeType\n        }\n        pages\n        artifacts {\n          id\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": types.FilesDocument,
    "\n  fragment JobFields on Job {\n    id\n    createdAt\n    projectId\n    fileId\n    file {\n      id\n      filename\n    }\n    batchId\n    operation\n    preset\n    options\n    state\n    progress\n    attempts\n    creditsReserved\n    creditsCharged\n    error {\n      code\n      message\n    }\n    artifacts {\n      id\n      name\n      step\n      mimeType\n      byteSize\n      createdAt\n    }\n    startedAt\n    finishedAt\n  }\n": types.JobFieldsFragmentDoc,
    "\n  query JobDetail($id: ID!) {\n    job(id: $id) {\n      ...JobFields\n    }\n  }\n": types.JobDetailDocument,
    "\n  subscription JobLive($id: ID!) {\n    jobUpdated(id: $id) {\n      ...JobFields\n    }\n  }\n": types.JobLiveDocument,
    "\n  mutation CancelJob($id: ID!, $key: String) {\n    cancelJob(id: $id, idempotencyKey: $key) {\n      ...JobFields\n    }\n  }\n": types.CancelJobDocument,
    "\n  query ApiKeys($first: Int, $after: String) {\n    apiKeys(first: $first, after: $after) {\n      nodes {\n        id\n        name\n        masked\n        environment\n        projectId\n        scopes\n        ipAllowList\n        allowedOperations\n        allowedProjects\n        spendLimit\n        rateLimit\n        expiresAt\n        revokedAt\n        lastUsedAt\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n    projects {\n      id\n      name\n    }\n  }\n": types.ApiKeysDocument,
    "\n  mutation CreateApiKey($input: CreateApiKeyInput!) {\n    createApiKey(input: $input) {\n      secret\n      apiKey {\n        id\n        masked\n      }\n    }\n  }\n": types.CreateApiKeyDocument,
    "\n  mutation RevokeApiKey($id: ID!) {\n    revokeApiKey(id: $id) {\n      id\n      revokedAt\n    }\n  }\n": types.RevokeApiKeyDocument,
    "\n  query Members {\n    members {\n      id\n      userId\n      email\n      role\n      createdAt\n    }\n    invitations {\n      id\n      email\n      role\n      createdAt\n      expiresAt\n    }\n  }\n": types.MembersDocument,
    "\n  mutation CreateInvitation($email: String!, $role: Role!) {\n    createInvitation(email: $email, role: $role) {\n      path\n      invitation {\n        id\n      }\n    }\n  }\n": types.CreateInvitationDocument,
    "\n  mutation RevokeInvitation($id: ID!) {\n    revokeInvitation(id: $id) {\n      id\n    }\n  }\n": types.RevokeInvitationDocument,
    "\n  mutation UpdateMember($id: ID!, $role: Role!) {\n    updateMember(id: $id, role: $role) {\n      id\n      role\n    }\n  }\n": types.UpdateMemberDocument,
    "\n  mutation RemoveMember($id: ID!) {\n    removeMember(id: $id) {\n      id\n    }\n  }\n": types.RemoveMemberDocument,
    "\n  query Overview {\n    usage {\n      ...UsageFields\n    }\n    queued: jobs(state: queued, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    running: jobs(state: running, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    succeeded: jobs(state: succeeded, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    failed: jobs(state: failed, first: 100) {\n      nodes {\n        id\n        createdAt\n        operation\n        preset\n        finishedAt\n        error {\n          code\n          message\n        }\n        file {\n          id\n          filename\n        }\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    cancelled: jobs(state: cancelled, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    operations {\n      name\n      kind\n      engine\n      available\n    }\n  }\n": types.OverviewDocument,
    "\n  query Projects {\n    projects {\n      id\n      name\n      concurrencyLimit\n      createdAt\n    }\n  }\n": types.ProjectsDocument,
    "\n  mutation CreateProject($input: CreateProjectInput!) {\n    createProject(input: $input) {\n      id\n      name\n      concurrencyLimit\n    }\n  }\n": types.CreateProjectDocument,
    "\n  mutation UpdateProject($id: ID!, $input: UpdateProjectInput!) {\n    updateProject(id: $id, input: $input) {\n      id\n      name\n      concurrencyLimit\n    }\n  }\n": types.UpdateProjectDocument,
    "\n  query RunSetup {\n    operations {\n      name\n      kind\n      description\n      available\n      engine\n      price {\n        credits\n        per\n      }\n      priceRule\n      inputFormats\n      optionsSchema\n      steps {\n        name\n        operation\n      }\n    }\n    files(first: 50) {\n      nodes {\n        id\n        filename\n        status\n        byteSize\n        pages\n        createdAt\n        detectedFormat {\n          extension\n          mimeType\n        }\n      }\n    }\n  }\n": types.RunSetupDocument,
    "\n  mutation CreateJob($input: CreateJobInput!, $key: String) {\n    createJob(input: $input, idempotencyKey: $key) {\n      id\n      state\n    }\n  }\n": types.CreateJobDocument,
    "\n  mutation CreateBatch($input: CreateBatchInput!, $key: String) {\n    createBatch(input: $input, idempotencyKey: $key) {\n      id\n      state\n    }\n  }\n": types.CreateBatchDocument,
    "\n  query EstimateJob($input: EstimateJobInput!) {\n    estimateJob(input: $input) {\n      credits\n      estimated\n      files {\n        fileId\n        pricing {\n          rule\n          pages\n          lines {\n            step\n            operation\n            units\n            credits\n          }\n        }\n      }\n    }\n  }\n": types.EstimateJobDocument,
    "\n  mutation SignIn($email: String!, $password: String!) {\n    signIn(email: $email, password: $password) {\n      role\n      csrfToken\n    }\n  }\n": types.SignInDocument,
    "\n  mutation SetPassword($token: String!, $password: String!) {\n    setPassword(token: $token, password: $password) {\n      role\n    }\n  }\n": types.SetPasswordDocument,
    "\n  query InvitationPreview($token: String!) {\n    invitation(token: $token) {\n      email\n      role\n      expiresAt\n      hasAccount\n      organization {\n        id\n        name\n      }\n    }\n  }\n": types.InvitationPreviewDocument,
    "\n  mutation AcceptInvitation($token: String!, $password: String!) {\n    acceptInvitation(token: $token, password: $password) {\n      role\n    }\n  }\n": types.AcceptInvitationDocument,
    "\n  fragment UsageFields on Usage {\n    projectId\n    period {\n      start\n      end\n    }\n    credits {\n      balance\n      reserved\n      used\n    }\n    storage {\n      bytes\n      files\n    }\n    egress {\n      bytes\n    }\n  }\n": types.UsageFieldsFragmentDoc,
    "\n  query Usage($from: String!, $to: String!) {\n    usage {\n      ...UsageFields\n    }\n    usageSeries(from: $from, to: $to) {\n      from\n      to\n      days {\n        date\n        credits\n        jobs\n        uploadedBytes\n        egressBytes\n      }\n      operations {\n        operation\n        jobs\n        credits\n      }\n    }\n  }\n": types.UsageDocument,
    "\n  query WebhookEndpoint($id: ID!, $first: Int, $after: String) {\n    webhookEndpoint(id: $id) {\n      id\n      createdAt\n      url\n      enabledEvents\n      status\n      disabledReason\n      disabledAt\n      failingSince\n      previousSecretExpiresAt\n      deliveries(first: $first, after: $after) {\n        nodes {\n          id\n          createdAt\n          eventId\n          eventType\n          status\n          attemptCount\n          nextAttemptAt\n          lastStatusCode\n          lastError\n          attempts {\n            attempt\n            createdAt\n            statusCode\n            durationMs\n            responseSnippet\n            error\n            nextAttemptAt\n          }\n        }\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n      }\n    }\n  }\n": types.WebhookEndpointDocument,
    "\n  mutation SendTestEvent($id: ID!) {\n    sendTestEvent(webhookEndpointId: $id) {\n      id\n      eventId\n      eventType\n    }\n  }\n": types.SendTestEventDocument,
    "\n  mutation EnableWebhookEndpoint($id: ID!) {\n    enableWebhookEndpoint(id: $id) {\n      id\n      status\n      disabledReason\n    }\n  }\n": types.EnableWebhookEndpointDocument,
    "\n  mutation DisableWebhookEndpoint($id: ID!) {\n    disableWebhookEndpoint(id: $id) {\n      id\n      status\n      disabledReason\n    }\n  }\n": types.DisableWebhookEndpointDocument,
    "\n  mutation RotateWebhookSecret($id: ID!, $key: String) {\n    rotateWebhookSecret(id: $id, idempotencyKey: $key) {\n      secret\n      webhookEndpoint {\n        id\n        previousSecretExpiresAt\n      }\n    }\n  }\n": types.RotateWebhookSecretDocument,
    "\n  mutation RetryDelivery($endpoint: ID!, $delivery: ID!, $key: String) {\n    retryDelivery(webhookEndpointId: $endpoint, deliveryId: $delivery, idempotencyKey: $key) {\n      id\n      status\n      attemptCount\n    }\n  }\n": types.RetryDeliveryDocument,
    "\n  mutation DeleteWebhookEndpoint($id: ID!) {\n    deleteWebhookEndpoint(id: $id) {\n      id\n    }\n  }\n": types.DeleteWebhookEndpointDocument,
    "\n  query WebhookEndpoints($first: Int, $after: String) {\n    webhookEndpoints(first: $first, after: $after) {\n      nodes {\n        id\n        createdAt\n        url\n        enabledEvents\n        status\n        disabledReason\n        failingSince\n        deliveries(first: 1) {\n          nodes {\n            id\n            status\n            createdAt\n            lastStatusCode\n          }\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": types.WebhookEndpointsDocument,
    "\n  mutation CreateWebhookEndpoint($input: CreateWebhookEndpointInput!, $key: String) {\n    createWebhookEndpoint(input: $input, idempotencyKey: $key) {\n      webhookEndpoint {\n        id\n        url\n      }\n      secret\n    }\n  }\n": types.CreateWebhookEndpointDocument,
    "\n  query Jobs($projectId: ID, $state: JobState, $first: Int, $after: String) {\n    jobs(projectId: $projectId, state: $state, first: $first, after: $after) {\n      nodes {\n        id\n        createdAt\n        fileId\n        file {\n          id\n          filename\n        }\n        batchId\n        operation\n        preset\n        state\n        progress\n        creditsReserved\n        creditsCharged\n        startedAt\n        finishedAt\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n": types.JobsDocument,
    "\n  mutation MintDownloadUrl($fileId: ID!, $artifactId: ID) {\n    createDownloadUrl(fileId: $fileId, artifactId: $artifactId) {\n      url\n      expiresAt\n    }\n  }\n": types.MintDownloadUrlDocument,
};

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 *
 *
 * @example
 * ```ts
 * const query = graphql(`query GetUser($id: ID!) { user(id: $id) { name } }`);
 * ```
 *
 * The query argument is unknown!
 * Please regenerate the types.
 */
export function graphql(source: string): unknown;

/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Viewer {\n    viewer {\n      user {\n        id\n        email\n      }\n      role\n      scopes\n      environment\n      organization {\n        id\n        name\n      }\n      project {\n        id\n        name\n      }\n    }\n    projects {\n      id\n      name\n    }\n  }\n"): (typeof documents)["\n  query Viewer {\n    viewer {\n      user {\n        id\n        email\n      }\n      role\n      scopes\n      environment\n      organization {\n        id\n        name\n      }\n      project {\n        id\n        name\n      }\n    }\n    projects {\n      id\n      name\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SignOut {\n    signOut {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation SignOut {\n    signOut {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription JobEvents($types: [String!]) {\n    events(types: $types) {\n      id\n      type\n      createdAt\n      data\n    }\n  }\n"): (typeof documents)["\n  subscription JobEvents($types: [String!]) {\n    events(types: $types) {\n      id\n      type\n      createdAt\n      data\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CreateUpload($input: CreateUploadInput!, $key: String) {\n    createUpload(input: $input, idempotencyKey: $key) {\n      upload {\n        ...UploadFields\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation CreateUpload($input: CreateUploadInput!, $key: String) {\n    createUpload(input: $input, idempotencyKey: $key) {\n      upload {\n        ...UploadFields\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment UploadFields on Upload {\n    id\n    fileId\n    state\n    uploadUrl\n    uploadHeaders\n    partSize\n    parts {\n      partNumber\n      url\n      byteOffset\n      byteSize\n    }\n  }\n"): (typeof documents)["\n  fragment UploadFields on Upload {\n    id\n    fileId\n    state\n    uploadUrl\n    uploadHeaders\n    partSize\n    parts {\n      partNumber\n      url\n      byteOffset\n      byteSize\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query GetUpload($id: ID!) {\n    upload(id: $id) {\n      ...UploadFields\n    }\n  }\n"): (typeof documents)["\n  query GetUpload($id: ID!) {\n    upload(id: $id) {\n      ...UploadFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RemintParts($id: ID!, $key: String) {\n    remintParts(uploadId: $id, idempotencyKey: $key) {\n      ...UploadFields\n    }\n  }\n"): (typeof documents)["\n  mutation RemintParts($id: ID!, $key: String) {\n    remintParts(uploadId: $id, idempotencyKey: $key) {\n      ...UploadFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CompleteParts($id: ID!, $parts: [PartInput!]!, $key: String) {\n    completeParts(uploadId: $id, parts: $parts, idempotencyKey: $key) {\n      id\n      status\n      filename\n    }\n  }\n"): (typeof documents)["\n  mutation CompleteParts($id: ID!, $parts: [PartInput!]!, $key: String) {\n    completeParts(uploadId: $id, parts: $parts, idempotencyKey: $key) {\n      id\n      status\n      filename\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CompleteFile($id: ID!, $key: String) {\n    completeFile(id: $id, idempotencyKey: $key) {\n      id\n      status\n      filename\n    }\n  }\n"): (typeof documents)["\n  mutation CompleteFile($id: ID!, $key: String) {\n    completeFile(id: $id, idempotencyKey: $key) {\n      id\n      status\n      filename\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AbortUpload($id: ID!, $key: String) {\n    abortUpload(uploadId: $id, idempotencyKey: $key) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation AbortUpload($id: ID!, $key: String) {\n    abortUpload(uploadId: $id, idempotencyKey: $key) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query UploadedFile($id: ID!) {\n    file(id: $id) {\n      id\n      status\n      filename\n    }\n  }\n"): (typeof documents)["\n  query UploadedFile($id: ID!) {\n    file(id: $id) {\n      id\n      status\n      filename\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Sessions {\n    sessions {\n      id\n      createdAt\n      lastSeenAt\n      expiresAt\n      ip\n      userAgent\n      current\n    }\n  }\n"): (typeof documents)["\n  query Sessions {\n    sessions {\n      id\n      createdAt\n      lastSeenAt\n      expiresAt\n      ip\n      userAgent\n      current\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RevokeSession($id: ID!) {\n    revokeSession(id: $id) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation RevokeSession($id: ID!) {\n    revokeSession(id: $id) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SignOutEverywhere {\n    signOutEverywhere\n  }\n"): (typeof documents)["\n  mutation SignOutEverywhere {\n    signOutEverywhere\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation ChangePassword($current: String!, $next: String!) {\n    changePassword(currentPassword: $current, newPassword: $next)\n  }\n"): (typeof documents)["\n  mutation ChangePassword($current: String!, $next: String!) {\n    changePassword(currentPassword: $current, newPassword: $next)\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query AiReadyJob($id: ID!) {\n    job(id: $id) {\n      id\n      state\n      preset\n      operation\n      fileId\n      file {\n        id\n        filename\n        pages\n        artifacts {\n          id\n          jobId\n          name\n          mimeType\n        }\n      }\n      artifacts {\n        id\n        name\n        mimeType\n      }\n    }\n  }\n"): (typeof documents)["\n  query AiReadyJob($id: ID!) {\n    job(id: $id) {\n      id\n      state\n      preset\n      operation\n      fileId\n      file {\n        id\n        filename\n        pages\n        artifacts {\n          id\n          jobId\n          name\n          mimeType\n        }\n      }\n      artifacts {\n        id\n        name\n        mimeType\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query RenderJobOptions($id: ID!) {\n    job(id: $id) {\n      id\n      options\n    }\n  }\n"): (typeof documents)["\n  query RenderJobOptions($id: ID!) {\n    job(id: $id) {\n      id\n      options\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RenderPages($input: CreateJobInput!, $key: String) {\n    createJob(input: $input, idempotencyKey: $key) {\n      id\n      state\n    }\n  }\n"): (typeof documents)["\n  mutation RenderPages($input: CreateJobInput!, $key: String) {\n    createJob(input: $input, idempotencyKey: $key) {\n      id\n      state\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription RenderLive($id: ID!) {\n    jobUpdated(id: $id) {\n      id\n      state\n      progress\n    }\n  }\n"): (typeof documents)["\n  subscription RenderLive($id: ID!) {\n    jobUpdated(id: $id) {\n      id\n      state\n      progress\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment BatchFields on Batch {\n    id\n    createdAt\n    operation\n    preset\n    options\n    state\n    counts {\n      queued\n      running\n      succeeded\n      failed\n      cancelled\n    }\n    creditsEstimated\n    creditsCharged\n    items {\n      fileId\n      jobId\n      state\n      error {\n        code\n        message\n      }\n    }\n  }\n"): (typeof documents)["\n  fragment BatchFields on Batch {\n    id\n    createdAt\n    operation\n    preset\n    options\n    state\n    counts {\n      queued\n      running\n      succeeded\n      failed\n      cancelled\n    }\n    creditsEstimated\n    creditsCharged\n    items {\n      fileId\n      jobId\n      state\n      error {\n        code\n        message\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query BatchDetail($id: ID!) {\n    batch(id: $id) {\n      ...BatchFields\n    }\n  }\n"): (typeof documents)["\n  query BatchDetail($id: ID!) {\n    batch(id: $id) {\n      ...BatchFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription BatchLive($id: ID!) {\n    batchUpdated(id: $id) {\n      ...BatchFields\n    }\n  }\n"): (typeof documents)["\n  subscription BatchLive($id: ID!) {\n    batchUpdated(id: $id) {\n      ...BatchFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query FileDetail($id: ID!) {\n    file(id: $id) {\n      id\n      createdAt\n      projectId\n      filename\n      status\n      byteSize\n      declaredMimeType\n      detectedFormat {\n        extension\n        mimeType\n      }\n      pages\n      sha256\n      duplicateOf\n      expiresAt\n      findings {\n        code\n        message\n      }\n      artifacts {\n        id\n        createdAt\n        jobId\n        step\n        name\n        mimeType\n        byteSize\n      }\n      history {\n        id\n        createdAt\n        type\n        jobId\n        summary\n      }\n    }\n  }\n"): (typeof documents)["\n  query FileDetail($id: ID!) {\n    file(id: $id) {\n      id\n      createdAt\n      projectId\n      filename\n      status\n      byteSize\n      declaredMimeType\n      detectedFormat {\n        extension\n        mimeType\n      }\n      pages\n      sha256\n      duplicateOf\n      expiresAt\n      findings {\n        code\n        message\n      }\n      artifacts {\n        id\n        createdAt\n        jobId\n        step\n        name\n        mimeType\n        byteSize\n      }\n      history {\n        id\n        createdAt\n        type\n        jobId\n        summary\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation DeleteFile($id: ID!) {\n    deleteFile(id: $id) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation DeleteFile($id: ID!) {\n    deleteFile(id: $id) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Files($projectId: ID, $first: Int, $after: String) {\n    viewer {\n      project {\n        id\n        name\n      }\n    }\n    files(projectId: $projectId, first: $first, after: $after) {\n      nodes {\n        id\n        createdAt\n        filename\n        status\n        byteSize\n        detectedFormat {\n          extension\n          mimeType\n        }\n        pages\n        artifacts {\n          id\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"): (typeof documents)["\n  query Files($projectId: ID, $first: Int, $after: String) {\n    viewer {\n      project {\n        id\n        name\n      }\n    }\n    files(projectId: $projectId, first: $first, after: $after) {\n      nodes {\n        id\n        createdAt\n        filename\n        status\n        byteSize\n        detectedFormat {\n          extension\n          mimeType\n        }\n        pages\n        artifacts {\n          id\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment JobFields on Job {\n    id\n    createdAt\n    projectId\n    fileId\n    file {\n      id\n      filename\n    }\n    batchId\n    operation\n    preset\n    options\n    state\n    progress\n    attempts\n    creditsReserved\n    creditsCharged\n    error {\n      code\n      message\n    }\n    artifacts {\n      id\n      name\n      step\n      mimeType\n      byteSize\n      createdAt\n    }\n    startedAt\n    finishedAt\n  }\n"): (typeof documents)["\n  fragment JobFields on Job {\n    id\n    createdAt\n    projectId\n    fileId\n    file {\n      id\n      filename\n    }\n    batchId\n    operation\n    preset\n    options\n    state\n    progress\n    attempts\n    creditsReserved\n    creditsCharged\n    error {\n      code\n      message\n    }\n    artifacts {\n      id\n      name\n      step\n      mimeType\n      byteSize\n      createdAt\n    }\n    startedAt\n    finishedAt\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query JobDetail($id: ID!) {\n    job(id: $id) {\n      ...JobFields\n    }\n  }\n"): (typeof documents)["\n  query JobDetail($id: ID!) {\n    job(id: $id) {\n      ...JobFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  subscription JobLive($id: ID!) {\n    jobUpdated(id: $id) {\n      ...JobFields\n    }\n  }\n"): (typeof documents)["\n  subscription JobLive($id: ID!) {\n    jobUpdated(id: $id) {\n      ...JobFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CancelJob($id: ID!, $key: String) {\n    cancelJob(id: $id, idempotencyKey: $key) {\n      ...JobFields\n    }\n  }\n"): (typeof documents)["\n  mutation CancelJob($id: ID!, $key: String) {\n    cancelJob(id: $id, idempotencyKey: $key) {\n      ...JobFields\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query ApiKeys($first: Int, $after: String) {\n    apiKeys(first: $first, after: $after) {\n      nodes {\n        id\n        name\n        masked\n        environment\n        projectId\n        scopes\n        ipAllowList\n        allowedOperations\n        allowedProjects\n        spendLimit\n        rateLimit\n        expiresAt\n        revokedAt\n        lastUsedAt\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n    projects {\n      id\n      name\n    }\n  }\n"): (typeof documents)["\n  query ApiKeys($first: Int, $after: String) {\n    apiKeys(first: $first, after: $after) {\n      nodes {\n        id\n        name\n        masked\n        environment\n        projectId\n        scopes\n        ipAllowList\n        allowedOperations\n        allowedProjects\n        spendLimit\n        rateLimit\n        expiresAt\n        revokedAt\n        lastUsedAt\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n    projects {\n      id\n      name\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CreateApiKey($input: CreateApiKeyInput!) {\n    createApiKey(input: $input) {\n      secret\n      apiKey {\n        id\n        masked\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation CreateApiKey($input: CreateApiKeyInput!) {\n    createApiKey(input: $input) {\n      secret\n      apiKey {\n        id\n        masked\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RevokeApiKey($id: ID!) {\n    revokeApiKey(id: $id) {\n      id\n      revokedAt\n    }\n  }\n"): (typeof documents)["\n  mutation RevokeApiKey($id: ID!) {\n    revokeApiKey(id: $id) {\n      id\n      revokedAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Members {\n    members {\n      id\n      userId\n      email\n      role\n      createdAt\n    }\n    invitations {\n      id\n      email\n      role\n      createdAt\n      expiresAt\n    }\n  }\n"): (typeof documents)["\n  query Members {\n    members {\n      id\n      userId\n      email\n      role\n      createdAt\n    }\n    invitations {\n      id\n      email\n      role\n      createdAt\n      expiresAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CreateInvitation($email: String!, $role: Role!) {\n    createInvitation(email: $email, role: $role) {\n      path\n      invitation {\n        id\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation CreateInvitation($email: String!, $role: Role!) {\n    createInvitation(email: $email, role: $role) {\n      path\n      invitation {\n        id\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RevokeInvitation($id: ID!) {\n    revokeInvitation(id: $id) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation RevokeInvitation($id: ID!) {\n    revokeInvitation(id: $id) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation UpdateMember($id: ID!, $role: Role!) {\n    updateMember(id: $id, role: $role) {\n      id\n      role\n    }\n  }\n"): (typeof documents)["\n  mutation UpdateMember($id: ID!, $role: Role!) {\n    updateMember(id: $id, role: $role) {\n      id\n      role\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RemoveMember($id: ID!) {\n    removeMember(id: $id) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation RemoveMember($id: ID!) {\n    removeMember(id: $id) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Overview {\n    usage {\n      ...UsageFields\n    }\n    queued: jobs(state: queued, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    running: jobs(state: running, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    succeeded: jobs(state: succeeded, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    failed: jobs(state: failed, first: 100) {\n      nodes {\n        id\n        createdAt\n        operation\n        preset\n        finishedAt\n        error {\n          code\n          message\n        }\n        file {\n          id\n          filename\n        }\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    cancelled: jobs(state: cancelled, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    operations {\n      name\n      kind\n      engine\n      available\n    }\n  }\n"): (typeof documents)["\n  query Overview {\n    usage {\n      ...UsageFields\n    }\n    queued: jobs(state: queued, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    running: jobs(state: running, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    succeeded: jobs(state: succeeded, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    failed: jobs(state: failed, first: 100) {\n      nodes {\n        id\n        createdAt\n        operation\n        preset\n        finishedAt\n        error {\n          code\n          message\n        }\n        file {\n          id\n          filename\n        }\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    cancelled: jobs(state: cancelled, first: 100) {\n      nodes {\n        id\n        createdAt\n      }\n      pageInfo {\n        hasNextPage\n      }\n    }\n    operations {\n      name\n      kind\n      engine\n      available\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Projects {\n    projects {\n      id\n      name\n      concurrencyLimit\n      createdAt\n    }\n  }\n"): (typeof documents)["\n  query Projects {\n    projects {\n      id\n      name\n      concurrencyLimit\n      createdAt\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CreateProject($input: CreateProjectInput!) {\n    createProject(input: $input) {\n      id\n      name\n      concurrencyLimit\n    }\n  }\n"): (typeof documents)["\n  mutation CreateProject($input: CreateProjectInput!) {\n    createProject(input: $input) {\n      id\n      name\n      concurrencyLimit\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation UpdateProject($id: ID!, $input: UpdateProjectInput!) {\n    updateProject(id: $id, input: $input) {\n      id\n      name\n      concurrencyLimit\n    }\n  }\n"): (typeof documents)["\n  mutation UpdateProject($id: ID!, $input: UpdateProjectInput!) {\n    updateProject(id: $id, input: $input) {\n      id\n      name\n      concurrencyLimit\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query RunSetup {\n    operations {\n      name\n      kind\n      description\n      available\n      engine\n      price {\n        credits\n        per\n      }\n      priceRule\n      inputFormats\n      optionsSchema\n      steps {\n        name\n        operation\n      }\n    }\n    files(first: 50) {\n      nodes {\n        id\n        filename\n        status\n        byteSize\n        pages\n        createdAt\n        detectedFormat {\n          extension\n          mimeType\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query RunSetup {\n    operations {\n      name\n      kind\n      description\n      available\n      engine\n      price {\n        credits\n        per\n      }\n      priceRule\n      inputFormats\n      optionsSchema\n      steps {\n        name\n        operation\n      }\n    }\n    files(first: 50) {\n      nodes {\n        id\n        filename\n        status\n        byteSize\n        pages\n        createdAt\n        detectedFormat {\n          extension\n          mimeType\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CreateJob($input: CreateJobInput!, $key: String) {\n    createJob(input: $input, idempotencyKey: $key) {\n      id\n      state\n    }\n  }\n"): (typeof documents)["\n  mutation CreateJob($input: CreateJobInput!, $key: String) {\n    createJob(input: $input, idempotencyKey: $key) {\n      id\n      state\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CreateBatch($input: CreateBatchInput!, $key: String) {\n    createBatch(input: $input, idempotencyKey: $key) {\n      id\n      state\n    }\n  }\n"): (typeof documents)["\n  mutation CreateBatch($input: CreateBatchInput!, $key: String) {\n    createBatch(input: $input, idempotencyKey: $key) {\n      id\n      state\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query EstimateJob($input: EstimateJobInput!) {\n    estimateJob(input: $input) {\n      credits\n      estimated\n      files {\n        fileId\n        pricing {\n          rule\n          pages\n          lines {\n            step\n            operation\n            units\n            credits\n          }\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query EstimateJob($input: EstimateJobInput!) {\n    estimateJob(input: $input) {\n      credits\n      estimated\n      files {\n        fileId\n        pricing {\n          rule\n          pages\n          lines {\n            step\n            operation\n            units\n            credits\n          }\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SignIn($email: String!, $password: String!) {\n    signIn(email: $email, password: $password) {\n      role\n      csrfToken\n    }\n  }\n"): (typeof documents)["\n  mutation SignIn($email: String!, $password: String!) {\n    signIn(email: $email, password: $password) {\n      role\n      csrfToken\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SetPassword($token: String!, $password: String!) {\n    setPassword(token: $token, password: $password) {\n      role\n    }\n  }\n"): (typeof documents)["\n  mutation SetPassword($token: String!, $password: String!) {\n    setPassword(token: $token, password: $password) {\n      role\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query InvitationPreview($token: String!) {\n    invitation(token: $token) {\n      email\n      role\n      expiresAt\n      hasAccount\n      organization {\n        id\n        name\n      }\n    }\n  }\n"): (typeof documents)["\n  query InvitationPreview($token: String!) {\n    invitation(token: $token) {\n      email\n      role\n      expiresAt\n      hasAccount\n      organization {\n        id\n        name\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation AcceptInvitation($token: String!, $password: String!) {\n    acceptInvitation(token: $token, password: $password) {\n      role\n    }\n  }\n"): (typeof documents)["\n  mutation AcceptInvitation($token: String!, $password: String!) {\n    acceptInvitation(token: $token, password: $password) {\n      role\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  fragment UsageFields on Usage {\n    projectId\n    period {\n      start\n      end\n    }\n    credits {\n      balance\n      reserved\n      used\n    }\n    storage {\n      bytes\n      files\n    }\n    egress {\n      bytes\n    }\n  }\n"): (typeof documents)["\n  fragment UsageFields on Usage {\n    projectId\n    period {\n      start\n      end\n    }\n    credits {\n      balance\n      reserved\n      used\n    }\n    storage {\n      bytes\n      files\n    }\n    egress {\n      bytes\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Usage($from: String!, $to: String!) {\n    usage {\n      ...UsageFields\n    }\n    usageSeries(from: $from, to: $to) {\n      from\n      to\n      days {\n        date\n        credits\n        jobs\n        uploadedBytes\n        egressBytes\n      }\n      operations {\n        operation\n        jobs\n        credits\n      }\n    }\n  }\n"): (typeof documents)["\n  query Usage($from: String!, $to: String!) {\n    usage {\n      ...UsageFields\n    }\n    usageSeries(from: $from, to: $to) {\n      from\n      to\n      days {\n        date\n        credits\n        jobs\n        uploadedBytes\n        egressBytes\n      }\n      operations {\n        operation\n        jobs\n        credits\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query WebhookEndpoint($id: ID!, $first: Int, $after: String) {\n    webhookEndpoint(id: $id) {\n      id\n      createdAt\n      url\n      enabledEvents\n      status\n      disabledReason\n      disabledAt\n      failingSince\n      previousSecretExpiresAt\n      deliveries(first: $first, after: $after) {\n        nodes {\n          id\n          createdAt\n          eventId\n          eventType\n          status\n          attemptCount\n          nextAttemptAt\n          lastStatusCode\n          lastError\n          attempts {\n            attempt\n            createdAt\n            statusCode\n            durationMs\n            responseSnippet\n            error\n            nextAttemptAt\n          }\n        }\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n      }\n    }\n  }\n"): (typeof documents)["\n  query WebhookEndpoint($id: ID!, $first: Int, $after: String) {\n    webhookEndpoint(id: $id) {\n      id\n      createdAt\n      url\n      enabledEvents\n      status\n      disabledReason\n      disabledAt\n      failingSince\n      previousSecretExpiresAt\n      deliveries(first: $first, after: $after) {\n        nodes {\n          id\n          createdAt\n          eventId\n          eventType\n          status\n          attemptCount\n          nextAttemptAt\n          lastStatusCode\n          lastError\n          attempts {\n            attempt\n            createdAt\n            statusCode\n            durationMs\n            responseSnippet\n            error\n            nextAttemptAt\n          }\n        }\n        pageInfo {\n          hasNextPage\n          endCursor\n        }\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation SendTestEvent($id: ID!) {\n    sendTestEvent(webhookEndpointId: $id) {\n      id\n      eventId\n      eventType\n    }\n  }\n"): (typeof documents)["\n  mutation SendTestEvent($id: ID!) {\n    sendTestEvent(webhookEndpointId: $id) {\n      id\n      eventId\n      eventType\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation EnableWebhookEndpoint($id: ID!) {\n    enableWebhookEndpoint(id: $id) {\n      id\n      status\n      disabledReason\n    }\n  }\n"): (typeof documents)["\n  mutation EnableWebhookEndpoint($id: ID!) {\n    enableWebhookEndpoint(id: $id) {\n      id\n      status\n      disabledReason\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation DisableWebhookEndpoint($id: ID!) {\n    disableWebhookEndpoint(id: $id) {\n      id\n      status\n      disabledReason\n    }\n  }\n"): (typeof documents)["\n  mutation DisableWebhookEndpoint($id: ID!) {\n    disableWebhookEndpoint(id: $id) {\n      id\n      status\n      disabledReason\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RotateWebhookSecret($id: ID!, $key: String) {\n    rotateWebhookSecret(id: $id, idempotencyKey: $key) {\n      secret\n      webhookEndpoint {\n        id\n        previousSecretExpiresAt\n      }\n    }\n  }\n"): (typeof documents)["\n  mutation RotateWebhookSecret($id: ID!, $key: String) {\n    rotateWebhookSecret(id: $id, idempotencyKey: $key) {\n      secret\n      webhookEndpoint {\n        id\n        previousSecretExpiresAt\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation RetryDelivery($endpoint: ID!, $delivery: ID!, $key: String) {\n    retryDelivery(webhookEndpointId: $endpoint, deliveryId: $delivery, idempotencyKey: $key) {\n      id\n      status\n      attemptCount\n    }\n  }\n"): (typeof documents)["\n  mutation RetryDelivery($endpoint: ID!, $delivery: ID!, $key: String) {\n    retryDelivery(webhookEndpointId: $endpoint, deliveryId: $delivery, idempotencyKey: $key) {\n      id\n      status\n      attemptCount\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation DeleteWebhookEndpoint($id: ID!) {\n    deleteWebhookEndpoint(id: $id) {\n      id\n    }\n  }\n"): (typeof documents)["\n  mutation DeleteWebhookEndpoint($id: ID!) {\n    deleteWebhookEndpoint(id: $id) {\n      id\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query WebhookEndpoints($first: Int, $after: String) {\n    webhookEndpoints(first: $first, after: $after) {\n      nodes {\n        id\n        createdAt\n        url\n        enabledEvents\n        status\n        disabledReason\n        failingSince\n        deliveries(first: 1) {\n          nodes {\n            id\n            status\n            createdAt\n            lastStatusCode\n          }\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"): (typeof documents)["\n  query WebhookEndpoints($first: Int, $after: String) {\n    webhookEndpoints(first: $first, after: $after) {\n      nodes {\n        id\n        createdAt\n        url\n        enabledEvents\n        status\n        disabledReason\n        failingSince\n        deliveries(first: 1) {\n          nodes {\n            id\n            status\n            createdAt\n            lastStatusCode\n          }\n        }\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation CreateWebhookEndpoint($input: CreateWebhookEndpointInput!, $key: String) {\n    createWebhookEndpoint(input: $input, idempotencyKey: $key) {\n      webhookEndpoint {\n        id\n        url\n      }\n      secret\n    }\n  }\n"): (typeof documents)["\n  mutation CreateWebhookEndpoint($input: CreateWebhookEndpointInput!, $key: String) {\n    createWebhookEndpoint(input: $input, idempotencyKey: $key) {\n      webhookEndpoint {\n        id\n        url\n      }\n      secret\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  query Jobs($projectId: ID, $state: JobState, $first: Int, $after: String) {\n    jobs(projectId: $projectId, state: $state, first: $first, after: $after) {\n      nodes {\n        id\n        createdAt\n        fileId\n        file {\n          id\n          filename\n        }\n        batchId\n        operation\n        preset\n        state\n        progress\n        creditsReserved\n        creditsCharged\n        startedAt\n        finishedAt\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"): (typeof documents)["\n  query Jobs($projectId: ID, $state: JobState, $first: Int, $after: String) {\n    jobs(projectId: $projectId, state: $state, first: $first, after: $after) {\n      nodes {\n        id\n        createdAt\n        fileId\n        file {\n          id\n          filename\n        }\n        batchId\n        operation\n        preset\n        state\n        progress\n        creditsReserved\n        creditsCharged\n        startedAt\n        finishedAt\n      }\n      pageInfo {\n        hasNextPage\n        endCursor\n      }\n    }\n  }\n"];
/**
 * The graphql function is used to parse GraphQL queries into a document that can be used by GraphQL clients.
 */
export function graphql(source: "\n  mutation MintDownloadUrl($fileId: ID!, $artifactId: ID) {\n    createDownloadUrl(fileId: $fileId, artifactId: $artifactId) {\n      url\n      expiresAt\n    }\n  }\n"): (typeof documents)["\n  mutation MintDownloadUrl($fileId: ID!, $artifactId: ID) {\n    createDownloadUrl(fileId: $fileId, artifactId: $artifactId) {\n      url\n      expiresAt\n    }\n  }\n"];

export function graphql(source: string) {
  return (documents as any)[source] ?? {};
}

export type DocumentType<TDocumentNode extends DocumentNode<any, any>> = TDocumentNode extends DocumentNode<  infer TType,  any>  ? TType  : never;