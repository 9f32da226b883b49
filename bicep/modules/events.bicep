// The Event Grid system topic on the storage account. Its subscription to the snapshot
// blob trigger is not in the template: the webhook URL carries the host's
// blobs_extension key, which exists only once the code is deployed and the host has
// started, and Event Grid validates the endpoint when the subscription is created. The
// postdeploy hook creates it (scripts/azd_hooks.py snapshot-events), waiting for the key
// and retrying; docs/deploy.md.
param name string
param location string
param tags object
param storageAccountId string

resource topic 'Microsoft.EventGrid/systemTopics@2022-06-15' = {
  name: name
  location: location
  tags: tags
  properties: {
    source: storageAccountId
    topicType: 'Microsoft.Storage.StorageAccounts'
  }
}

output name string = topic.name
