from locust import FastHttpUser, task

class Index(FastHttpUser):
    @task
    def index(self):
        self.client.get("/index.html")

    @task
    def missing(self):
        self.client.get("/missing")
